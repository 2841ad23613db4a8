// Package procs owns the rig's view of the local process table (Linux
// /proc): which live processes belong to a process group or have a given
// parent. The rig uses it to find what a tool or a probe left running.
package procs
