// Package snowflake mints Snowflake IDs under a nodeid lease, in the bit
// layout of github.com/bwmarrin/snowflake or a custom Layout.
package snowflake
