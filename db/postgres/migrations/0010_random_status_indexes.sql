-- Status-list indexes are drawn at random (issue 21): the column takes the index it is given, no sequence.
ALTER TABLE "session_status_indexes" ALTER COLUMN "status_index" DROP IDENTITY;--> statement-breakpoint
-- A claimed index must not be one a revoked session's bit still sets: looked up by index.
CREATE INDEX "revocations_status_index_idx" ON "revocations" USING btree ("status_index");
