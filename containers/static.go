package containers

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
)

// ErrNotStatic reports a file that cannot run in a FROM scratch image: not a
// linux executable, or dynamically linked.
var ErrNotStatic = errors.New("not a static linux executable")

// staticInfo is what the image needs to know about a static executable.
type staticInfo struct {
	Arch string // Docker's name for its architecture: x86_64, aarch64, …
}

// checkStatic reports whether path is a statically linked linux ELF
// executable: no program interpreter (PT_INTERP) and no shared libraries
// (DT_NEEDED). An os.PathError is returned as is.
func checkStatic(path string) (staticInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return staticInfo{}, err
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		return staticInfo{}, fmt.Errorf("%w: %s is not an ELF file", ErrNotStatic, path)
	}
	defer ef.Close()
	if ef.Type != elf.ET_EXEC && ef.Type != elf.ET_DYN {
		return staticInfo{}, fmt.Errorf("%w: %s is an ELF %s, not an executable", ErrNotStatic, path, ef.Type)
	}
	if ef.OSABI != elf.ELFOSABI_NONE && ef.OSABI != elf.ELFOSABI_LINUX {
		return staticInfo{}, fmt.Errorf("%w: %s is built for %s, not linux", ErrNotStatic, path, ef.OSABI)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			return staticInfo{}, fmt.Errorf("%w: %s is dynamically linked (it names a program interpreter)", ErrNotStatic, path)
		}
	}
	if libs, err := ef.ImportedLibraries(); err == nil && len(libs) > 0 {
		return staticInfo{}, fmt.Errorf("%w: %s is dynamically linked (it needs %v)", ErrNotStatic, path, libs)
	}
	return staticInfo{Arch: elfArch(ef.Machine)}, nil
}

// elfArch names an ELF machine as `docker info` names architectures.
func elfArch(m elf.Machine) string {
	switch m {
	case elf.EM_X86_64:
		return "x86_64"
	case elf.EM_AARCH64:
		return "aarch64"
	case elf.EM_386:
		return "i386"
	case elf.EM_ARM:
		return "armv7l"
	case elf.EM_PPC64:
		return "ppc64le"
	case elf.EM_S390:
		return "s390x"
	case elf.EM_RISCV:
		return "riscv64"
	}
	return m.String()
}

// goarch is the GOARCH that builds for a docker architecture name.
func goarch(arch string) string {
	switch arch {
	case "x86_64":
		return "amd64"
	case "aarch64":
		return "arm64"
	case "i386", "i686":
		return "386"
	case "armv7l":
		return "arm"
	}
	return arch
}
