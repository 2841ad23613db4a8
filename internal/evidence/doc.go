// Package evidence answers the questions the verdict asks of a case's server
// events: how many attempts reached the server, whether a reconcile probe ran
// between them, what was delivered to the workload and to the last attempt,
// which steps a step sequence took, how many connections retried a rejected
// credential, what a cut upload left on the host. Every answer is keyed by one Session (connection, channel).
package evidence
