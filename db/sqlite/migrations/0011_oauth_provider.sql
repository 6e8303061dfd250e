-- The OAuth 2.1 / OpenID provider's models (oidc-provider's adapter): one row by kind and id, its JSON payload, and the columns its lookups need.
CREATE TABLE `oauth_models` (
	`kind` text NOT NULL,
	`id` text NOT NULL,
	`payload` text NOT NULL,
	`grant_id` text,
	`user_code` text,
	`uid` text,
	`account_id` text,
	`expires_at` integer,
	`consumed_at` integer,
	PRIMARY KEY(`kind`, `id`)
);
--> statement-breakpoint
CREATE INDEX `oauth_models_grant_idx` ON `oauth_models` (`grant_id`);--> statement-breakpoint
CREATE INDEX `oauth_models_user_code_idx` ON `oauth_models` (`kind`,`user_code`);--> statement-breakpoint
CREATE INDEX `oauth_models_uid_idx` ON `oauth_models` (`kind`,`uid`);--> statement-breakpoint
CREATE INDEX `oauth_models_account_idx` ON `oauth_models` (`kind`,`account_id`);--> statement-breakpoint
CREATE INDEX `oauth_models_expires_idx` ON `oauth_models` (`expires_at`);
