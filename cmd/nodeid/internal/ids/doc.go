// Package ids holds the commands that read Snowflake IDs: decode (split an
// ID into its fields, with no database) and who (find the lease that minted
// it, from the history). It reads the string forms of
// github.com/bwmarrin/snowflake's IDs and the flags of a layout, and gives
// the demo Trace.
package ids
