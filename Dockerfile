# One image for every component; the command picks the service:
#   node apps/gateway/dist/main.js | node apps/oms/dist/main.js | node apps/dms/dist/main.js
#   node apps/gateway/dist/cli/admin.js <command>
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY apps/gateway/package.json apps/gateway/
COPY apps/oms/package.json apps/oms/
COPY apps/dms/package.json apps/dms/
COPY libs/contracts/package.json libs/contracts/
COPY libs/core/package.json libs/core/
COPY libs/database/package.json libs/database/
COPY libs/messaging/package.json libs/messaging/
COPY libs/paging/package.json libs/paging/
COPY libs/testing/package.json libs/testing/
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY libs libs
COPY apps apps
RUN npx tsc -b && npm prune --omit=dev --no-audit --no-fund \
  && find apps libs -name '*.ts' -not -name '*.d.ts' -delete \
  && find apps libs -name 'src' -type d -empty -delete

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=root:root /app /app
USER node
EXPOSE 3000
CMD ["node", "apps/gateway/dist/main.js"]
