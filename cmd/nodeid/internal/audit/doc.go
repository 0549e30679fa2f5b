// Package audit holds "nodeid audit": it reads a column of 64-bit IDs
// (from files, standard input, or a query streamed through a server-side
// cursor), splits each in its layout, and reports the duplicates and, per
// node field, the time ranges in which two processes must have used the
// same node field. It needs no lease table: it is for teams that do not
// use nodeid yet as much as for those who do.
//
// The IDs are sorted by node field, time, step and process in bounded
// chunks, spilled to temporary files and merged (sorter), so that the
// memory an audit takes does not grow with the number of IDs; the merged
// stream is judged in one pass (judge).
package audit
