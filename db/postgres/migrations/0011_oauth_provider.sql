-- The OAuth 2.1 / OpenID provider's models (oidc-provider's adapter): one row by kind and id, its JSON payload, and the columns its lookups need.
CREATE TABLE "oauth_models" (
	"kind" text NOT NULL,
	"id" text NOT NULL,
	"payload" text NOT NULL,
	"grant_id" text,
	"user_code" text,
	"uid" text,
	"account_id" text,
	"expires_at" timestamp with time zone,
	"consumed_at" timestamp with time zone,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "oauth_models_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	CONSTRAINT "oauth_models_kind_id_pk" PRIMARY KEY("kind","id")
);
--> statement-breakpoint
CREATE INDEX "oauth_models_grant_idx" ON "oauth_models" USING btree ("grant_id");--> statement-breakpoint
CREATE INDEX "oauth_models_user_code_idx" ON "oauth_models" USING btree ("kind","user_code");--> statement-breakpoint
CREATE INDEX "oauth_models_uid_idx" ON "oauth_models" USING btree ("kind","uid");--> statement-breakpoint
CREATE INDEX "oauth_models_account_idx" ON "oauth_models" USING btree ("kind","account_id");--> statement-breakpoint
CREATE INDEX "oauth_models_expires_idx" ON "oauth_models" USING btree ("expires_at");
