package containers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/moby/moby/client"
)

// Removed is one object GC removed.
type Removed struct {
	Kind  string // "container" or "image"
	ID    string // short id
	Name  string // container name or image tag
	RunID string // LabelRun
	State string // a container's state when it was removed ("running", "exited", …)
}

func (r Removed) String() string {
	s := fmt.Sprintf("%s %s", r.Kind, r.ID)
	if r.Name != "" {
		s += " " + r.Name
	}
	if r.State != "" {
		s += " (" + r.State + ")"
	}
	if r.RunID != "" {
		s += " run " + r.RunID
	}
	return s
}

// GCOptions configure GC.
type GCOptions struct {
	// Images also removes the cached server images (the next run then
	// builds its image again).
	Images bool
	// Run, when set, limits GC to what the run of this id created (the
	// LabelRun a Launcher's RunID sets): the containers of that run and,
	// with Images, the images it built. Another run's, or another user's on
	// a shared engine, stay.
	Run string
}

// filter selects the rig's objects, of one run when o.Run is set.
func (o GCOptions) filter() client.Filters {
	if o.Run != "" {
		return labelFilter(LabelRig+"=true", LabelRun+"="+o.Run)
	}
	return labelFilter(LabelRig + "=true")
}

// GC removes every container labelled LabelRig=true, running or not, and
// with o.Images every image so labelled: whatever a crashed or killed run
// left behind. It also removes the containers of runs still in progress.
// With o.Run it removes only that run's. Without a Docker engine the error
// wraps ErrNoDocker.
func GC(ctx context.Context, o GCOptions) ([]Removed, error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	var removed []Removed
	var errs []error
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: o.filter()})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range list.Items {
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", short(c.ID), err))
			continue
		}
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		removed = append(removed, Removed{Kind: "container", ID: short(c.ID), Name: name, RunID: c.Labels[LabelRun], State: string(c.State)})
	}
	if !o.Images {
		return removed, errors.Join(errs...)
	}
	imgs, err := cli.ImageList(ctx, client.ImageListOptions{Filters: o.filter()})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("list images: %w", err))...)
	}
	for _, img := range imgs.Items {
		id := strings.TrimPrefix(img.ID, "sha256:")
		name := ""
		if len(img.RepoTags) > 0 {
			name = img.RepoTags[0]
		}
		if _, err := cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("remove image %s: %w", short(id), err))
			continue
		}
		removed = append(removed, Removed{Kind: "image", ID: short(id), Name: name, RunID: img.Labels[LabelRun]})
	}
	return removed, errors.Join(errs...)
}
