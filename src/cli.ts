#!/usr/bin/env node
import { runAdmin } from './admin.js'

// `npx account-service <command>` (package.json bin); the commands live in src/admin.ts (the runner) and src/cli/ (one command group a file).
process.exitCode = await runAdmin(process.argv.slice(2))
