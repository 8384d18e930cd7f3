# The service image: Node.js for npm, Bun from the npm devDependency `bun`
# (npm ci installs it for this platform), which runs the service itself.
FROM node:20-bookworm-slim

WORKDIR /app

# Dependencies first, so that a source change does not reinstall them. Bun is a
# devDependency, so devDependencies stay (no --omit=dev, no NODE_ENV=production).
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm cache clean --force

COPY . .

# Embedded mode keeps its data in /data (its own PostgreSQL server's cluster, the
# master key file); with DATABASE_URL only the key file, if VOICE_MASTER_KEY is unset.
RUN mkdir -p /data && chown node:node /data
ENV HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data \
    NPM_CONFIG_UPDATE_NOTIFIER=false
VOLUME ["/data"]
USER node

# HTTP (gateway) and SIP (media role).
EXPOSE 8080 5060/udp 5060/tcp

HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"

# What `npm start` runs, without npm: `docker stop` signals the container's first
# process, and npm passes SIGTERM to the shell it runs scripts in, which dies without
# passing it on. The service would then be killed with the container instead of
# stopping in order (requests drained, its PostgreSQL server shut down).
CMD ["/app/node_modules/.bin/bun", "src/main.ts"]
