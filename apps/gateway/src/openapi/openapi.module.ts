import { Module } from '@nestjs/common';
import { OpenApiController, PublishedOpenApi } from './openapi.controller.js';

/** `GET /v1/openapi.json`; `setupOpenApi` loads the document and adds `/docs` once the app exists. */
@Module({
  controllers: [OpenApiController],
  providers: [PublishedOpenApi],
  exports: [PublishedOpenApi],
})
export class OpenApiModule {}
