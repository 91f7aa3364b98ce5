/**
 * SQL for the services' stored API JSON (`api_json` columns written by triggers), shared by their migrations.
 */

/**
 * `api_json_date_time(value)`'s expression written out, for a trigger's hot path: that SQL function is
 * declared immutable around the stable `to_char`, so the planner never inlines it and every call runs the
 * SQL function executor. The text is the same: RFC 3339 UTC with milliseconds, quoted, or `null`.
 */
export const inlineJsonDateTime = (value: string): string =>
  `coalesce('"' || to_char(${value} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null')`;
