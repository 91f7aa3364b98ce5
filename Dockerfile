# One image for every component; the container command picks the process:
#   node --heap-growing-percent=100 apps/gateway/dist/main.js   gateway (HTTP 3000, ops 9100)
#   node --no-memory-reducer --no-allocation-site-pretenuring apps/oms/dist/main.js   OMS (ops 9101; the options: docs/operations.md)
#   node --no-memory-reducer --max-semi-space-size=32 apps/dms/dist/main.js   DMS (ops 9102)
#   (the OMS and the DMS also with GLIBC_TUNABLES=glibc.malloc.trim_threshold=16777216:glibc.malloc.mmap_threshold=4194304:glibc.malloc.arena_max=2
#   in their environment, as the manifests and docker-compose.yml give it: docs/operations.md)
#   node apps/oms/dist/worker.js          bulk-job worker (ops 9103)
#   node --max-semi-space-size=32 apps/device-gateway/dist/main.js   device gateway (HTTP 5055, MQTT 1883/8883, Teltonika 5027, ops 9104)
#   node apps/<gateway|oms|dms>/dist/migrate.js   migrate one database and exit
#   node apps/gateway/dist/cli/admin.js <command> provisioning (tenant create, key rotate, demo seed, ...)
#
# Node runs as PID 1 without an init: every long-running process handles SIGTERM itself (graceful
# shutdown), and none of them spawns children, so there are no zombies to reap.
# Node 20, the version the project supports (package.json `engines`; `npm run lint` checks every
# dependency in package-lock.json accepts it).
ARG NODE_IMAGE=node:20-bookworm-slim

# The package manifests: `npm ci` needs the lockfile and every workspace's package.json (add new workspaces here).
FROM ${NODE_IMAGE} AS manifests
# No install-time telemetry from dependencies' postinstall scripts.
ENV SCARF_ANALYTICS=false
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY apps/gateway/package.json apps/gateway/
COPY apps/oms/package.json apps/oms/
COPY apps/dms/package.json apps/dms/
COPY apps/device-gateway/package.json apps/device-gateway/
COPY apps/simulator/package.json apps/simulator/
COPY libs/contracts/package.json libs/contracts/
COPY libs/core/package.json libs/core/
COPY libs/database/package.json libs/database/
COPY libs/messaging/package.json libs/messaging/
COPY libs/observability/package.json libs/observability/
COPY libs/paging/package.json libs/paging/
COPY libs/outbox/package.json libs/outbox/
COPY libs/sdk/package.json libs/sdk/
COPY libs/geofence/package.json libs/geofence/
COPY libs/readings/package.json libs/readings/
COPY libs/rate-limit/package.json libs/rate-limit/
COPY libs/testing/package.json libs/testing/
COPY libs/webhooks/package.json libs/webhooks/

# Build: every dependency, then `tsc -b`; /out receives each workspace's package.json and dist only.
FROM manifests AS build
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY libs libs
COPY apps apps
COPY scripts/build-web.mjs scripts/
# The tracking page's files (MapLibre GL, the Natural Earth basemap) go to apps/gateway/dist/web, the
# OpenAPI document the gateway serves to apps/gateway/dist/openapi.json (as `npm run build` does).
RUN npx tsc -b && node scripts/build-web.mjs && node apps/gateway/dist/openapi/write-openapi.js \
  && for workspace in apps/* libs/*; do \
       mkdir -p "/out/$workspace" && cp -R "$workspace/package.json" "$workspace/dist" "/out/$workspace/"; \
     done \
  && find /out -name '*.tsbuildinfo' -delete

# Production dependencies only, installed from the same lockfile (workspace links included).
FROM manifests AS production-dependencies
RUN npm ci --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
# Outside a container the processes bind loopback by default; inside one, the API and ops ports must be
# reachable from the container network. No NODE_OPTIONS=--enable-source-maps: each entry file maps its own
# stack traces, reading only our source maps and only when a trace needs one (libs/core/src/source-maps.ts).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    OPS_HOST=0.0.0.0
WORKDIR /app
COPY --chown=root:root package.json ./
COPY --from=production-dependencies --chown=root:root /app/node_modules node_modules
COPY --from=build --chown=root:root /out ./
# The image's `node` user, by id, so that Kubernetes' runAsNonRoot can verify it. The files stay owned by
# root: the processes only read them, and the root filesystem may be mounted read-only.
USER 1000:1000
EXPOSE 3000 9100 9101 9102 9103 5055 1883 8883 5027 9104
STOPSIGNAL SIGTERM
CMD ["node", "--heap-growing-percent=100", "apps/gateway/dist/main.js"]
