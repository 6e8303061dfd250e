CREATE TABLE `webhook_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`message_id` text NOT NULL,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`claimed_until` integer,
	`last_error` text,
	`created_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_outbox_message_id_unique` ON `webhook_outbox` (`message_id`);--> statement-breakpoint
CREATE INDEX `webhook_outbox_due_idx` ON `webhook_outbox` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `webhook_outbox_finished_idx` ON `webhook_outbox` (`finished_at`);