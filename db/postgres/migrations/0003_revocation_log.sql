CREATE TABLE "revocations" (
	"seq" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "revocations_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"session_id" text NOT NULL,
	"user_id" integer NOT NULL,
	"status_index" integer,
	"user_deleted" boolean DEFAULT false NOT NULL,
	"revoked_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "session_status_indexes" (
	"status_index" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "session_status_indexes_status_index_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"session_id" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "session_status_indexes" ADD CONSTRAINT "session_status_indexes_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "revocations_revoked_at_idx" ON "revocations" USING btree ("revoked_at");--> statement-breakpoint
CREATE UNIQUE INDEX "session_status_indexes_session_unique" ON "session_status_indexes" USING btree ("session_id");--> statement-breakpoint
-- Sessions started before this migration get their status-list index too, in the order they began.
INSERT INTO "session_status_indexes" ("session_id") SELECT "id" FROM "sessions" ORDER BY "created_at", "id";
