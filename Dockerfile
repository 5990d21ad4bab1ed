# feedrunner: production image. `docker run ... feedrunner start` runs the adapter, the fetch workers
# and the runner from the environment (see .env.example); `adapter`, `worker`, `runner` run one part.

FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY stubs ./stubs
# Production dependencies only; tsx runs the TypeScript sources (on Node 22 in the main thread, so the
# compiled dist/ that `npm install` builds on Node 20 saves little here). --ignore-scripts: the build
# (`prepare`) needs the sources and typescript, neither of which is in this stage.
RUN npm install --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --chown=node:node package.json ./
COPY --chown=node:node bin ./bin
COPY --chown=node:node src ./src
COPY --chown=node:node contracts ./contracts
COPY --chown=node:node jobs ./jobs
USER node
EXPOSE 8080 9080
ENTRYPOINT ["node", "bin/feedrunner.js"]
CMD ["start"]
