// Package realclients is the table of the wrappers in docs/examples that drive
// real SSH clients (OpenSSH's sftp, scp and ControlMaster, Dropbear's
// dbclient, PuTTY's plink): which program each needs, and, for a naive one,
// the cases where its defect lies with the rule that must catch it. The
// tests that run them on the embedded and the container target, and the
// table in docs/real-clients.md, follow it.
package realclients
