package containers

// CheckPublished is checkPublished, for the tests of package containers_test
// (they run the rig, which imports this package).
var CheckPublished = checkPublished

// The helpers of package containers' own tests that package containers_test
// uses too.
var (
	NeedDocker      = needDocker
	NewLauncher     = newLauncher
	TestClient      = testClient
	RigContainers   = rigContainers
	LabelFilter     = labelFilter
	ReadFile        = readFile
	ReportDurations = reportDurations
)
