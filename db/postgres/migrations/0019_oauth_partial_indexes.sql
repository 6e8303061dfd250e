-- The OAuth models' lookup indexes hold only the rows that have the column: most kinds leave it null, and a row in no index is written to fewer B-trees.
DROP INDEX "oauth_models_grant_idx";--> statement-breakpoint
DROP INDEX "oauth_models_user_code_idx";--> statement-breakpoint
DROP INDEX "oauth_models_uid_idx";--> statement-breakpoint
DROP INDEX "oauth_models_account_idx";--> statement-breakpoint
CREATE INDEX "oauth_models_grant_idx" ON "oauth_models" USING btree ("grant_id") WHERE "oauth_models"."grant_id" is not null;--> statement-breakpoint
CREATE INDEX "oauth_models_user_code_idx" ON "oauth_models" USING btree ("kind","user_code") WHERE "oauth_models"."user_code" is not null;--> statement-breakpoint
CREATE INDEX "oauth_models_uid_idx" ON "oauth_models" USING btree ("kind","uid") WHERE "oauth_models"."uid" is not null;--> statement-breakpoint
CREATE INDEX "oauth_models_account_idx" ON "oauth_models" USING btree ("kind","account_id") WHERE "oauth_models"."account_id" is not null;