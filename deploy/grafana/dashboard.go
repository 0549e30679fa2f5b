// Package grafana generates nodeid.json, the Grafana dashboard of nodeid,
// from the panels below. docs/metrics.md#dashboard describes each panel;
// the tests check that nodeid.json is what Dashboard returns and that
// every query returns data from series shaped like nodeid's.
package grafana

import (
	"encoding/json"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// A query of a panel, and the legend of its series.
type query struct{ expr, legend string }

// A panel: a time series of one or more queries.
type panel struct {
	title, description string
	unit               string // Grafana's unit: "short", "s", "reqps", ...
	bars               bool   // counts of events per interval rather than a level
	queries            []query
}

// A row of panels.
type row struct {
	title  string
	panels []panel
}

// Fleet-wide sums group by namespace, table and node range, as the alert
// rules do (deploy/prometheus/nodeid.rules.yml).
var rows = []row{
	{"Leases", []panel{
		{
			title:       "Node IDs held and free",
			description: "Leases held by the processes Prometheus scrapes, and the rest of the node range; a crashed holder's node ID stays taken in the table until its lease expires.",
			unit:        "short",
			queries: []query{
				{`sum by (namespace, nodeid_table, nodeid_node_range) (nodeid_lease_held{nodeid_table=~"$table"})`,
					"held {{nodeid_table}} {{nodeid_node_range}} {{namespace}}"},
				{`max by (namespace, nodeid_table, nodeid_node_range) (nodeid_range_size{nodeid_table=~"$table"}) - sum by (namespace, nodeid_table, nodeid_node_range) (nodeid_lease_held{nodeid_table=~"$table"})`,
					"free {{nodeid_table}} {{nodeid_node_range}} {{namespace}}"},
			},
		},
		{
			title:       "Time left to the deadline, lowest per table",
			description: "The least time left of any held lease until its local deadline. While renewals succeed it stays between TTL·9/10 and about TTL·9/10 − TTL/3; NodeIDLeaseNearDeadline fires below TTL/3.",
			unit:        "s",
			queries: []query{
				{`min by (namespace, nodeid_table) (nodeid_lease_time_left_seconds{nodeid_table=~"$table"})`,
					"{{nodeid_table}} {{namespace}}"},
			},
		},
		{
			title:       "Renewal latency",
			description: "The median and the 99th percentile of the renewals that succeeded: one round trip of the renew statement.",
			unit:        "s",
			queries: []query{
				{`histogram_quantile(0.5, sum by (namespace, nodeid_table, le) (rate(nodeid_lease_renewal_duration_seconds_bucket{nodeid_table=~"$table", nodeid_outcome="renewed"}[$__rate_interval])))`,
					"p50 {{nodeid_table}} {{namespace}}"},
				{`histogram_quantile(0.99, sum by (namespace, nodeid_table, le) (rate(nodeid_lease_renewal_duration_seconds_bucket{nodeid_table=~"$table", nodeid_outcome="renewed"}[$__rate_interval])))`,
					"p99 {{nodeid_table}} {{namespace}}"},
			},
		},
		{
			title:       "Renewal attempts by outcome",
			description: "Renewal attempts per second: renewed, retried (failed, another follows), lost (the lease ended during the attempt).",
			unit:        "ops",
			queries: []query{
				{`sum by (namespace, nodeid_table, nodeid_outcome) (rate(nodeid_lease_renewals_total{nodeid_table=~"$table"}[$__rate_interval]))`,
					"{{nodeid_outcome}} {{nodeid_table}} {{namespace}}"},
			},
		},
		{
			title:       "Leases ended, by cause",
			description: "Leases that ended in each interval, by cause; released is a holder's own release (a rollout, a shutdown), every other cause a loss.",
			unit:        "short",
			bars:        true,
			queries: []query{
				{`sum by (namespace, nodeid_table, nodeid_cause) (increase(nodeid_lease_lost_total{nodeid_table=~"$table"}[$__rate_interval]))`,
					"{{nodeid_cause}} {{nodeid_table}} {{namespace}}"},
			},
		},
	}},
	{"Claims", []panel{
		{
			title:       "Acquire calls by outcome",
			description: "Acquire calls per second that ended acquired, none_available (no node ID free) or error.",
			unit:        "ops",
			queries: []query{
				{`sum by (namespace, nodeid_table, nodeid_outcome) (rate(nodeid_acquire_duration_seconds_count{nodeid_table=~"$table"}[$__rate_interval]))`,
					"{{nodeid_outcome}} {{nodeid_table}} {{namespace}}"},
			},
		},
		{
			title:       "Acquire calls waiting for a node ID",
			description: "Processes that cannot start because every node ID of their range is held or not claimable yet.",
			unit:        "short",
			queries: []query{
				{`sum by (namespace, nodeid_table, nodeid_node_range) (nodeid_acquire_waiting{nodeid_table=~"$table"})`,
					"{{nodeid_table}} {{nodeid_node_range}} {{namespace}}"},
			},
		},
		{
			title:       "Failover quarantine, time left",
			description: "How long the quarantine that refused the latest claim still lasts after a database failover, move or restore; 0 when none is in force.",
			unit:        "s",
			queries: []query{
				{`clamp_min(max by (namespace, nodeid_table, nodeid_node_range) (nodeid_quarantine_until_seconds{nodeid_table=~"$table"}) - time(), 0)`,
					"{{nodeid_table}} {{nodeid_node_range}} {{namespace}}"},
			},
		},
		{
			title:       "Generator waits and refusals by reason",
			description: "Generate calls per second that waited for the clock (sequence_exhausted, clock_behind) or minted nothing (lease_ended, beyond_horizon, clock_behind, time_overflow).",
			unit:        "ops",
			queries: []query{
				{`sum by (namespace, nodeid_table, nodeid_reason) (rate(nodeid_generator_waits_total{nodeid_table=~"$table"}[$__rate_interval]))`,
					"wait {{nodeid_reason}} {{nodeid_table}} {{namespace}}"},
				{`sum by (namespace, nodeid_table, nodeid_reason) (rate(nodeid_generator_refusals_total{nodeid_table=~"$table"}[$__rate_interval]))`,
					"refusal {{nodeid_reason}} {{nodeid_table}} {{namespace}}"},
			},
		},
	}},
	{"nodeid serve", []panel{
		{
			title:       "IDs served per second",
			description: "IDs that nodeid serve wrote in its answers to /id and /ids. IDs minted by programs with the library or under nodeid run are not counted: a generator does not count the IDs it mints.",
			unit:        "short",
			queries: []query{
				{`sum by (namespace, job, nodeid_table) (rate(nodeid_serve_ids_total{nodeid_table=~"$table"}[$__rate_interval]))`,
					"{{job}} {{nodeid_table}} {{namespace}}"},
			},
		},
		{
			title:       "ID requests by route and status",
			description: "Requests per second to /id and /ids, by status code: 200 served, 503 no lease, 400 a bad request.",
			unit:        "reqps",
			queries: []query{
				{`sum by (namespace, job, http_route, http_response_status_code) (rate(http_server_request_duration_seconds_count{http_route=~"/ids?"}[$__rate_interval]))`,
					"{{http_route}} {{http_response_status_code}} {{job}} {{namespace}}"},
			},
		},
		{
			title:       "ID request latency, 99th percentile",
			description: "The 99th percentile of the time nodeid serve took to answer /id and /ids.",
			unit:        "s",
			queries: []query{
				{`histogram_quantile(0.99, sum by (namespace, job, http_route, le) (rate(http_server_request_duration_seconds_bucket{http_route=~"/ids?"}[$__rate_interval])))`,
					"{{http_route}} {{job}} {{namespace}}"},
			},
		},
	}},
}

// Dashboard returns the dashboard as indented JSON, as nodeid.json holds it.
func Dashboard() ([]byte, error) {
	ds := common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
	b := dashboard.NewDashboardBuilder("nodeid").
		Uid("nodeid").
		Description("Leases of Snowflake node IDs from PostgreSQL tables, their renewals and losses, the claims, and nodeid serve. docs/metrics.md#dashboard describes each panel.").
		Tags([]string{"nodeid"}).
		Refresh("30s").
		Time("now-6h", "now").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("table").
			Label("Table").
			Datasource(ds).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(nodeid_lease_held, nodeid_table)")}).
			Definition("label_values(nodeid_lease_held, nodeid_table)").
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).
			IncludeAll(true).
			AllValue(".*"))
	id := uint32(0)
	for _, r := range rows {
		id++
		b = b.WithRow(dashboard.NewRowBuilder(r.title).Id(id))
		for _, p := range r.panels {
			id++
			tp := timeseries.NewPanelBuilder().
				Id(id).
				Title(p.title).
				Description(p.description).
				Datasource(ds).
				Unit(p.unit).
				Min(0).
				Height(8).
				Span(12).
				Legend(common.NewVizLegendOptionsBuilder().
					DisplayMode(common.LegendDisplayModeList).
					Placement(common.LegendPlacementBottom).
					ShowLegend(true)).
				Tooltip(common.NewVizTooltipOptionsBuilder().
					Mode(common.TooltipDisplayModeMulti).
					Sort(common.SortOrderDescending))
			if p.bars {
				tp = tp.DrawStyle(common.GraphDrawStyleBars).FillOpacity(80)
			}
			for i, q := range p.queries {
				tp = tp.WithTarget(prometheus.NewDataqueryBuilder().
					RefId(string(rune('A' + i))).
					Datasource(ds).
					Expr(q.expr).
					LegendFormat(q.legend))
			}
			b = b.WithPanel(tp)
		}
	}
	d, err := b.Build()
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
