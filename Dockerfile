# syntax=docker/dockerfile:1
# One image for every role: `start --role all|receiver|worker` (README.md#commands).
# Build:  docker build -t streamkeeper .
# Run:    docker run -e REDIS_URL=redis://redis:6379 ... streamkeeper start --role receiver
ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: every dependency (TypeScript), then compile src/ to dist/ ---
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts/copy-assets.mjs ./scripts/
RUN npx tsc -p tsconfig.build.json
# The archive's migrations and the Lua scripts are read beside their compiled modules.
RUN node scripts/copy-assets.mjs

# --- runtime: production dependencies and dist/ only, as the unprivileged `node` user ---
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# Inside a container 127.0.0.1 is reachable from that container alone: Prometheus, the
# kubelet's probes and compose's other services reach the admin port (metrics, /healthz,
# /readyz) over the container network, so the admin surface listens on every interface
# of the container. The container is the boundary: compose publishes 9090 on the host's
# loopback only, Kubernetes keeps it behind a ClusterIP Service. Outside a container the
# default stays 127.0.0.1 (config.ts).
ENV ADMIN_HOST=0.0.0.0
# Used for generated webhook credentials, the embedded redis-server (not in this image) and
# the embedded Postgres, each one per container: set REDIS_URL, ARCHIVE_DATABASE_URL and
# the WEBHOOK_* credentials when running more than one (docs/deploy.md).
ENV DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The operator view's page (/admin/), served as it is from the repository.
COPY web ./web
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8080 9090
# Slim images have no curl: Node's fetch asks the admin port's /healthz (process alive;
# /readyz, which needs Redis, is for readiness, not for restarts).
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.ADMIN_PORT || 9090}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# `start` stops on SIGTERM: no new requests, in-flight work finished within SHUTDOWN_TIMEOUT_MS.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["start", "--role", "all"]
