// Package realclients is the table of the wrappers in docs/examples that drive
// real SSH clients (OpenSSH's sftp, scp and ControlMaster, Dropbear's
// dbclient, PuTTY's plink): which program each needs, and, for a naive one,
// the cases of the default matrix and every step case of its conversation,
// with the rule that must catch its defect where it lies. The
// tests that run them on the embedded and the container target, and the
// table in docs/real-clients.md, follow it.
package realclients
