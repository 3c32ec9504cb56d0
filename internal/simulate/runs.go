package simulate

import "context"

// Input is one profile to simulate and the workload it schedules.
type Input struct {
	Profile  Profile
	Workload *Workload
}

// Simulate runs each input on cluster in turn and reports them, the pods of each with the node
// labels columns and the pods per zone counted by zoneLabel. With two inputs, Moved lists the
// pods that the second placed elsewhere than the first. `manager simulate` and the operator's
// preview both call it.
func Simulate(ctx context.Context, cluster *Cluster, inputs []Input, columns []string, zoneLabel string) (*Report, error) {
	report := &Report{}
	for _, in := range inputs {
		results, err := Run(ctx, in.Profile, cluster, in.Workload)
		if err != nil {
			return nil, err
		}
		report.Runs = append(report.Runs, NewRunReport(in.Profile.Name, cluster, in.Workload, results, columns, zoneLabel))
	}
	if len(report.Runs) > 1 {
		report.Moved = Compare(report.Runs[0], report.Runs[1])
	}
	return report, nil
}
