package containers

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
)

// DefaultSCP is where Debian's openssh-client installs scp.
const DefaultSCP = "/usr/bin/scp"

// scpFiles puts the host's scp into the FROM scratch image, with the shared
// libraries and loader it needs as ldd lists them, at the same paths, and the
// /etc/passwd and /etc/group entries scp looks its user up in (it refuses to
// run for a uid it cannot find). Legacy scp (scp -O) runs scp -t or -f on
// the server; with this the container target answers it as the embedded
// target does, with the same program. No scp on the host (or an ldd that
// cannot say what it needs) leaves it out: the image then answers legacy
// scp as an sshd on a host without scp does, and why is said on progress.
func (l *Launcher) scpFiles() []ctxFile {
	scp := l.SCP
	if scp == "" {
		scp = DefaultSCP
	}
	data, err := os.ReadFile(scp)
	if err != nil {
		l.progressf("sshrig: the image has no scp (legacy scp -O will fail): %v; apt-get install openssh-client\n", err)
		return nil
	}
	libs, err := sharedLibraries(scp)
	if err != nil {
		l.progressf("sshrig: the image has no scp (legacy scp -O will fail): %v\n", err)
		return nil
	}
	files := []ctxFile{{name: "rootfs/usr/bin/scp", mode: 0o755, data: data}}
	for _, lib := range libs {
		b, err := os.ReadFile(lib) // the file a symlink names, under the link's name
		if err != nil {
			l.progressf("sshrig: the image has no scp (legacy scp -O will fail): %v\n", err)
			return nil
		}
		files = append(files, ctxFile{name: "rootfs" + lib, mode: 0o755, data: b})
	}
	files = append(files,
		ctxFile{name: "rootfs/etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/scratch:/bin/sh\n")},
		ctxFile{name: "rootfs/etc/group", mode: 0o644, data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		ctxFile{name: "rootfs/etc/nsswitch.conf", mode: 0o644, data: []byte("passwd: files\ngroup: files\n")})
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.name); d != "rootfs" && d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		files = append(files, ctxFile{name: d, mode: 0o755, dir: true})
	}
	return files
}

// sharedLibraries is what ldd says bin needs: each library's path and the
// program interpreter's, as absolute paths.
func sharedLibraries(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, path.Clean(f[2])) // libc.so.6 => /lib/…/libc.so.6 (0x…)
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			libs = append(libs, path.Clean(f[0])) // the loader: /lib64/ld-linux-x86-64.so.2 (0x…)
		case len(f) >= 3 && f[1] == "=>" && f[2] == "not":
			return nil, fmt.Errorf("ldd %s: %s is not found", bin, f[0])
		}
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("ldd %s lists no libraries or loader", bin)
	}
	return libs, nil
}
