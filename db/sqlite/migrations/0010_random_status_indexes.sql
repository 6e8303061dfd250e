-- Status-list indexes are drawn at random (issue 21): the table takes the index it is given, no counter.
CREATE TABLE `__new_session_status_indexes` (
	`status_index` integer PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_session_status_indexes` (`status_index`, `session_id`) SELECT `status_index`, `session_id` FROM `session_status_indexes`;--> statement-breakpoint
DROP TABLE `session_status_indexes`;--> statement-breakpoint
ALTER TABLE `__new_session_status_indexes` RENAME TO `session_status_indexes`;--> statement-breakpoint
CREATE UNIQUE INDEX `session_status_indexes_session_unique` ON `session_status_indexes` (`session_id`);--> statement-breakpoint
-- A claimed index must not be one a revoked session's bit still sets: looked up by index.
CREATE INDEX `revocations_status_index_idx` ON `revocations` (`status_index`);
