CREATE TABLE `security_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`type` text NOT NULL,
	`user_id` integer,
	`session_id` text,
	`ip` text,
	`user_agent` text,
	`request_id` text,
	`detail` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `security_events_user_idx` ON `security_events` (`user_id`,`id`);--> statement-breakpoint
CREATE INDEX `security_events_created_idx` ON `security_events` (`created_at`);--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_signing_keys` (
	`kid` text PRIMARY KEY NOT NULL,
	`algorithm` text NOT NULL,
	`public_key_pem` text NOT NULL,
	`private_key_pem` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_signing_keys`("kid", "algorithm", "public_key_pem", "private_key_pem", "created_at") SELECT "kid", "algorithm", "public_key_pem", "private_key_pem", "created_at" FROM `signing_keys`;--> statement-breakpoint
DROP TABLE `signing_keys`;--> statement-breakpoint
ALTER TABLE `__new_signing_keys` RENAME TO `signing_keys`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
ALTER TABLE `sessions` ADD `authenticated_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Sessions from before this migration: their last password proof was their login.
UPDATE `sessions` SET `authenticated_at` = `created_at`;
