/**
 * The two tables the authorization matrix compares (e2e/authorization-matrix.test.ts): the route
 * table of an app, read from fastify's `printRoutes({ commonPrefix: false })`, and the expected
 * results, read from docs/SECURITY.md's "Authorization matrix" table.
 */
export interface Route {
  app: string;
  method: string;
  url: string;
}

/**
 * fastify's route tree: one line per node, `├── /segment (GET, HEAD)` under its parent, four
 * characters of indentation per level; a node without methods is only a shared prefix.
 */
export function parseRouteTree(app: string, tree: string): Route[] {
  const routes: Route[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    if (!line.trim()) continue;
    const m = /^((?:[│ ] {3})*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) throw new Error(`unreadable line in ${app}'s route tree: ${JSON.stringify(line)}`);
    const depth = m[1].length / 4;
    stack.length = depth;
    const url = `${stack[depth - 1] ?? ''}${m[2]}`;
    stack.push(url);
    for (const method of m[3]?.split(',').map((s) => s.trim()) ?? []) routes.push({ app, method, url });
  }
  return routes;
}

export interface MatrixRow {
  app: string;
  method: string;
  route: string;
  /** Principal → `ok`, `401` or `403`. */
  cells: Record<string, string>;
}

const CELL_VALUES = new Set(['ok', '401', '403']);
const HEADING = '## Authorization matrix';

/**
 * The first markdown table after the "Authorization matrix" heading. Its first three columns are
 * app, method and route (the route in backticks); every other column is a principal.
 */
export function matrixRows(markdown: string): MatrixRow[] {
  const start = markdown.indexOf(`\n${HEADING}\n`);
  if (start < 0) throw new Error(`docs/SECURITY.md has no "${HEADING}" section`);
  const lines = markdown.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const table: string[] = [];
  for (let i = first; i >= 0 && i < lines.length && lines[i].startsWith('|'); i++) table.push(lines[i]);
  const cellsOf = (line: string) =>
    line
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => c.trim().replace(/^`|`$/g, ''));
  if (table.length < 3) throw new Error('the authorization matrix table has no rows');
  const header = cellsOf(table[0]);
  if (header.slice(0, 3).join(',') !== 'app,method,route')
    throw new Error(`the matrix's first columns must be app, method, route; got ${header.slice(0, 3).join(', ')}`);
  const principals = header.slice(3);
  return table.slice(2).map((line) => {
    const c = cellsOf(line);
    if (c.length !== header.length)
      throw new Error(`matrix row with ${c.length} cells, the header has ${header.length}: ${line}`);
    const cells = Object.fromEntries(principals.map((p, i) => [p, c[i + 3]]));
    for (const [p, v] of Object.entries(cells))
      if (!CELL_VALUES.has(v))
        throw new Error(`matrix cell ${c[0]} ${c[1]} ${c[2]} / ${p} is '${v}' (ok, 401 or 403 expected)`);
    return { app: c[0], method: c[1], route: c[2], cells };
  });
}
