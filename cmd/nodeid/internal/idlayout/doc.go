// Package idlayout is how the commands of nodeid that mint or read IDs
// choose their layout: LayoutFlags, the flags that name a preset and
// replace its fields, and IDLayout, a snowflake.Layout with the order of
// its fields, which takes an ID apart (Decoder).
package idlayout
