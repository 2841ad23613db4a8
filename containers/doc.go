// Package containers is the container target: it runs the rig's SSH server
// (`sshrig serve`, the same server the embedded target runs in process)
// inside a disposable Docker container started with testcontainers-go.
//
// It owns:
//
//   - the offline image: FROM scratch, a static linux build of sshrig and a
//     static busybox for /bin/sh (or a user's base image plus the static
//     binary), built from a context assembled here, tagged by content hash
//     so repeated runs reuse it, and never pulled from a registry;
//   - the container: least privilege (no host mounts, not privileged, every
//     capability dropped but CAP_SYS_ADMIN kept in the bounding set for the
//     commands' own user and mount namespaces (the server, as nobody, holds
//     none), no-new-privileges, read-only root with tmpfs
//     /scratch and /tmp, an unprivileged user), the SSH and control ports
//     published on 127.0.0.1 only, waited for on the server's ready line;
//   - a reboot case's container of its own (LaunchRebootable), which its
//     Endpoint.Reboot kills, keeps down and starts again: its /scratch on a
//     volume of its own and its host key in its environment, so the host
//     comes back with its files, its ledger and the key the tool pinned;
//   - the Endpoint the engine drives: addresses, logs, liveness, and an
//     out-of-band reading of the ledger (docker exec inside the container,
//     independent of the SSH server) that must agree with the one over SSH;
//   - cleanup: every container and image the rig creates carries the labels
//     org.sshrig.rig=true and org.sshrig.run=<run id>; a launcher removes its
//     containers when the run ends, fails or is interrupted, and GC removes
//     whatever a crashed run left behind (`sshrig gc`).
//
// The testcontainers reaper (Ryuk) is an image that would have to be pulled,
// and the rig must work with no registry, so it is disabled and the rig
// cleans up itself.
package containers
