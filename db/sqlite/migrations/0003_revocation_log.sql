CREATE TABLE `revocations` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`session_id` text NOT NULL,
	`user_id` integer NOT NULL,
	`status_index` integer,
	`user_deleted` integer DEFAULT false NOT NULL,
	`revoked_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `revocations_revoked_at_idx` ON `revocations` (`revoked_at`);--> statement-breakpoint
CREATE TABLE `session_status_indexes` (
	`status_index` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`session_id` text NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `session_status_indexes_session_unique` ON `session_status_indexes` (`session_id`);--> statement-breakpoint
-- Sessions started before this migration get their status-list index too, in the order they began.
INSERT INTO `session_status_indexes` (`session_id`) SELECT `id` FROM `sessions` ORDER BY `created_at`, `id`;
