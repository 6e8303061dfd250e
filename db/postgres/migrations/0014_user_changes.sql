ALTER TABLE "revocations" ALTER COLUMN "session_id" DROP NOT NULL;--> statement-breakpoint
-- A user-change row (session_id null): what GET /users/:id shows of a user (names, email, username)
-- changed, or the user was deleted. Every instance follows the log and drops its copy of that user
-- (core/users/user-cache.ts). Written by the database, so no write path, other process or later
-- route can change a user without telling the instances. The function's INSERT finds revocations
-- through the connection's search_path, as every query of the service does.
CREATE FUNCTION "log_user_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "revocations" ("session_id", "user_id", "revoked_at") VALUES (NULL, OLD."id", now());
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "users_shown_fields_changed" AFTER UPDATE OF "first_name", "last_name", "email", "username" ON "users"
FOR EACH ROW WHEN (OLD."first_name" IS DISTINCT FROM NEW."first_name" OR OLD."last_name" IS DISTINCT FROM NEW."last_name"
  OR OLD."email" IS DISTINCT FROM NEW."email" OR OLD."username" IS DISTINCT FROM NEW."username")
EXECUTE FUNCTION "log_user_change"();--> statement-breakpoint
CREATE TRIGGER "users_deleted" AFTER DELETE ON "users"
FOR EACH ROW EXECUTE FUNCTION "log_user_change"();
