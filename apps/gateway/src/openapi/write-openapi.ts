import 'reflect-metadata';
import { writeFile } from 'node:fs/promises';
import { OPENAPI_FILE } from './openapi.controller.js';
import { offlineOpenApiDocument } from './offline-document.js';

// Run by `npm run build` after tsc: the document `GET /v1/openapi.json` serves, as its bytes, so that no
// gateway process builds it (openapi.spec.ts checks that it equals what the code describes).
await writeFile(OPENAPI_FILE, JSON.stringify(await offlineOpenApiDocument()));
