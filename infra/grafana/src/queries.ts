// Reads the PromQL of every panel out of dashboard JSON (what Grafana would send), so a test can run
// each against a real Prometheus.

export interface PanelQuery {
  dashboard: string;
  panel: string;
  refId: string;
  expr: string;
}

interface PanelJson {
  title?: string;
  type?: string;
  targets?: Array<{ expr?: string; refId?: string }>;
  panels?: PanelJson[];
}

export function panelQueries(dashboardJson: { title?: string; panels?: PanelJson[] }): PanelQuery[] {
  const out: PanelQuery[] = [];
  const walk = (panels: PanelJson[] | undefined) => {
    for (const p of panels ?? []) {
      for (const t of p.targets ?? []) {
        if (t.expr)
          out.push({
            dashboard: dashboardJson.title ?? '?',
            panel: p.title ?? '?',
            refId: t.refId ?? '?',
            expr: t.expr,
          });
      }
      walk(p.panels); // collapsed rows nest their panels
    }
  };
  walk(dashboardJson.panels);
  return out;
}

/**
 * Grafana's variable interpolation, for the variables our dashboards use: a template variable set
 * to "All" becomes its allValue (`.*`), and `$__rate_interval` the given window.
 */
export function substituteVariables(expr: string, rateInterval: string, values: Record<string, string> = {}): string {
  return expr
    .replace(/\$__rate_interval/g, rateInterval)
    .replace(/\$\{?(\w+)(?::\w+)?\}?/g, (whole, name: string) => values[name] ?? '.*');
}
