CREATE TABLE `email_codes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`email` text NOT NULL,
	`code_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`attempts` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `email_codes_email_created_idx` ON `email_codes` (`email`,`created_at`);--> statement-breakpoint
CREATE INDEX `email_codes_expires_idx` ON `email_codes` (`expires_at`);