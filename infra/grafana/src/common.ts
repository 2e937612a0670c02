// Shared building blocks for the dashboards: every panel queries the provisioned Prometheus
// datasource (uid `prometheus`, infra/grafana/provisioning/datasources/prometheus.yml) and is built
// with @grafana/grafana-foundation-sdk, so the JSON in infra/grafana/dashboards/ is generated output.
import * as common from '@grafana/grafana-foundation-sdk/common';
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import * as stat from '@grafana/grafana-foundation-sdk/stat';
import * as statetimeline from '@grafana/grafana-foundation-sdk/statetimeline';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';

export const DATASOURCE: common.DataSourceRef = { type: 'prometheus', uid: 'prometheus' };

/** Work queues only: not a DLQ (`<queue>.dlq`) nor a retry tier (`<queue>.retry.<delay>`). */
export const WORK_QUEUE = 'queue!~".+\\\\.(dlq|retry\\\\..+)"';

export interface Query {
  expr: string;
  legend?: string;
}

function target(q: Query, refId: string): DataqueryBuilder {
  const b = new DataqueryBuilder().datasource(DATASOURCE).expr(q.expr).refId(refId).range();
  return q.legend === undefined ? b : b.legendFormat(q.legend);
}

const REF_IDS = 'ABCDEFGH';

export interface PanelOptions {
  title: string;
  description: string;
  unit: string;
  queries: Query[];
  span?: number;
  height?: number;
  stack?: boolean;
  min?: number;
  max?: number;
}

/** A time series panel with a table legend (last, max), one line per label set. */
export function graph(o: PanelOptions): timeseries.PanelBuilder {
  let p = new timeseries.PanelBuilder()
    .title(o.title)
    .description(o.description)
    .datasource(DATASOURCE)
    .unit(o.unit)
    .span(o.span ?? 12)
    .height(o.height ?? 8)
    .lineWidth(1)
    .fillOpacity(o.stack ? 40 : 10)
    .showPoints(common.VisibilityMode.Never)
    .legend(
      new common.VizLegendOptionsBuilder()
        .showLegend(true)
        .displayMode(common.LegendDisplayMode.Table)
        .placement(common.LegendPlacement.Bottom)
        .calcs(['lastNotNull', 'max']),
    )
    .tooltip(
      new common.VizTooltipOptionsBuilder().mode(common.TooltipDisplayMode.Multi).sort(common.SortOrder.Descending),
    );
  if (o.stack) p = p.stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal));
  if (o.min !== undefined) p = p.min(o.min);
  if (o.max !== undefined) p = p.max(o.max);
  o.queries.forEach((q, i) => (p = p.withTarget(target(q, REF_IDS[i]))));
  return p;
}

export interface StatOptions {
  title: string;
  description: string;
  unit: string;
  query: Query;
  /** Thresholds as [value, color] steps above the base color. */
  steps?: Array<[number, string]>;
  baseColor?: string;
  mappings?: dashboard.ValueMapping[];
  span?: number;
}

/** A single big number (the last value) with a sparkline and threshold colours. */
export function single(o: StatOptions): stat.PanelBuilder {
  let p = new stat.PanelBuilder()
    .title(o.title)
    .description(o.description)
    .datasource(DATASOURCE)
    .unit(o.unit)
    .span(o.span ?? 3)
    .height(4)
    .graphMode(common.BigValueGraphMode.Area)
    .colorMode(common.BigValueColorMode.Background)
    .reduceOptions(new common.ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false))
    .thresholds(
      new dashboard.ThresholdsConfigBuilder()
        .mode(dashboard.ThresholdsMode.Absolute)
        .steps([
          { value: null, color: o.baseColor ?? 'green' },
          ...(o.steps ?? []).map(([value, color]) => ({ value, color })),
        ]),
    )
    .withTarget(target(o.query, 'A'));
  if (o.mappings) p = p.mappings(o.mappings);
  return p;
}

/** A state timeline: a 0/1 gauge drawn as coloured bands over time (e.g. a breaker). */
export function states(o: StatOptions & { height?: number; span?: number }): statetimeline.PanelBuilder {
  let p = new statetimeline.PanelBuilder()
    .title(o.title)
    .description(o.description)
    .datasource(DATASOURCE)
    .unit(o.unit)
    .span(o.span ?? 12)
    .height(o.height ?? 5)
    .mergeValues(true)
    .thresholds(
      new dashboard.ThresholdsConfigBuilder()
        .mode(dashboard.ThresholdsMode.Absolute)
        .steps([
          { value: null, color: o.baseColor ?? 'green' },
          ...(o.steps ?? []).map(([value, color]) => ({ value, color })),
        ]),
    )
    .withTarget(target(o.query, 'A'));
  if (o.mappings) p = p.mappings(o.mappings);
  return p;
}

/** A multi-value label variable (with "All" = `.*`) filled from a series' label values. */
export function labelVariable(name: string, label: string, query: string): dashboard.QueryVariableBuilder {
  return new dashboard.QueryVariableBuilder(name)
    .label(label)
    .datasource(DATASOURCE)
    .query({ query, refId: 'PrometheusVariableQueryEditor-VariableQuery', qryType: 1 })
    .definition(query)
    .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
    .sort(dashboard.VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue('.*')
    .current({ text: 'All', value: '$__all', selected: true });
}

export function row(title: string): dashboard.RowBuilder {
  return new dashboard.RowBuilder(title);
}
