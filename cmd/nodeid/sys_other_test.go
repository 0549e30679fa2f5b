//go:build !unix

package main

// unixLike says whether this system has POSIX processes and signals.
const unixLike = false
