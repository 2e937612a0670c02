// The setup shared by `npm start` and `npm test`. Node built-ins only, so it runs on a fresh clone; the
// project's own rules (env defaults, ports, management URL) are loaded once dependencies are installed.
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { ensureDependencies } from './deps.mjs';
import { ensureProjectNode } from './node-runtime.mjs';
import { loadProjectRules } from './project-rules.mjs';
import { ensureRabbitPlugins } from './rabbitmq.mjs';
import { ensureServices } from './services.mjs';
import { ensureDatabase } from './database.mjs';
import { log } from './log.mjs';
import { ensureTools } from './tools.mjs';
import { checkBrokerFileLimit, removeLeftovers } from './leftovers.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * 1. dependencies (npm ci when node_modules is missing or stale), the project's Node (re-run on
 *    node_modules/.bin/node when started on another, node-runtime.mjs), then the project's rules
 * 2. RabbitMQ, PostgreSQL, Redis reachable (start / docker compose / apt, see services.mjs)
 * 3. RabbitMQ plugins enabled, management API answering
 * 4. (npm test) what killed test runs leaked removed, the broker's open-file limit checked
 * 5. Prisma client generated, database created and migrated
 * Returns the management API URL.
 */
export async function setup({ services = true, tools = false, testHygiene = false } = {}) {
  process.chdir(ROOT);
  const started = Date.now();
  ensureDependencies(ROOT);
  await ensureProjectNode(ROOT); // re-runs the command on node_modules/.bin/node when this node is not the project's
  await loadProjectRules(ROOT);
  if (tools) ensureTools();
  if (!services) return null;
  await ensureServices(ROOT, process.env);
  const mgmt = await ensureRabbitPlugins(process.env);
  if (testHygiene) {
    await removeLeftovers(ROOT, mgmt, process.env);
    await checkBrokerFileLimit(mgmt);
  }
  ensureDatabase(ROOT);
  log.ok(`setup done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return mgmt;
}
