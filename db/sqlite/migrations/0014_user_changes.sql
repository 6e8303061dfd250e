PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_revocations` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`session_id` text,
	`user_id` integer NOT NULL,
	`status_index` integer,
	`user_deleted` integer DEFAULT false NOT NULL,
	`revoked_at` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_revocations`("seq", "session_id", "user_id", "status_index", "user_deleted", "revoked_at") SELECT "seq", "session_id", "user_id", "status_index", "user_deleted", "revoked_at" FROM `revocations`;--> statement-breakpoint
-- The log's seq goes on where it was, even when pruning left no row: an instance following the log
-- (its cursor at the last seq it read) must never see a seq again.
DELETE FROM `sqlite_sequence` WHERE `name` = '__new_revocations';--> statement-breakpoint
INSERT INTO `sqlite_sequence` (`name`, `seq`) SELECT '__new_revocations', `seq` FROM `sqlite_sequence` WHERE `name` = 'revocations';--> statement-breakpoint
DROP TABLE `revocations`;--> statement-breakpoint
ALTER TABLE `__new_revocations` RENAME TO `revocations`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `revocations_revoked_at_idx` ON `revocations` (`revoked_at`);--> statement-breakpoint
CREATE INDEX `revocations_status_index_idx` ON `revocations` (`status_index`);--> statement-breakpoint
-- A user-change row (session_id null): what GET /users/:id shows of a user (names, email, username)
-- changed, or the user was deleted. Every instance follows the log and drops its copy of that user
-- (core/users/user-cache.ts). Written by the database, so no write path, other process or later
-- route can change a user without telling the instances. (A migration that rebuilds users must
-- create these again: the store contract suite checks them.)
CREATE TRIGGER `users_shown_fields_changed` AFTER UPDATE OF `first_name`, `last_name`, `email`, `username` ON `users`
FOR EACH ROW WHEN OLD.`first_name` IS NOT NEW.`first_name` OR OLD.`last_name` IS NOT NEW.`last_name`
  OR OLD.`email` IS NOT NEW.`email` OR OLD.`username` IS NOT NEW.`username`
BEGIN
  INSERT INTO `revocations` (`session_id`, `user_id`, `revoked_at`) VALUES (NULL, NEW.`id`, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;--> statement-breakpoint
CREATE TRIGGER `users_deleted` AFTER DELETE ON `users`
FOR EACH ROW
BEGIN
  INSERT INTO `revocations` (`session_id`, `user_id`, `revoked_at`) VALUES (NULL, OLD.`id`, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;
