#!/usr/bin/env node
import { runAdmin } from './admin.js'

// `npx account-service <command>` (package.json bin); the commands live in src/admin.ts.
process.exitCode = await runAdmin(process.argv.slice(2))
