# One image for the gateway, the worker and the wallet simulator; compose picks the command.

# --- build: every dependency, then TypeScript to dist/ -------------------------------------------
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workers ./workers
RUN npm run build

# --- runtime: production dependencies and the compiled JavaScript only ---------------------------
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The files stay root-owned and read-only to the process; it writes nothing to disk.
USER node
EXPOSE 8080
# `npm start` without npm in between, so SIGTERM reaches node and the graceful shutdown runs.
CMD ["node", "dist/src/main/gateway.js"]
