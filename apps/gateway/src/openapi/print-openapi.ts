import 'reflect-metadata';
import { offlineOpenApiDocument } from './offline-document.js';

// `npm run -s openapi > openapi.json`: the gateway's OpenAPI document on stdout, without a running stack.
process.stdout.write(`${JSON.stringify(await offlineOpenApiDocument(), null, 2)}\n`);
