package manager

import (
	"flag"
	"io"
)

// Command is an offline subcommand of the manager as its reference page describes it
// (docs/reference/cli.md, which hack/cli-doc writes from these).
type Command struct {
	// Name is the subcommand's name: `manager <Name>`.
	Name string
	// Flags is the flag set the subcommand parses its arguments with; its Usage prints the
	// subcommand's help.
	Flags *flag.FlagSet
	// ExitCodes are the codes the subcommand exits with, in ascending order.
	ExitCodes []ExitCode
}

// ExitCode is one exit code of a subcommand and when it is returned.
type ExitCode struct {
	Code    int
	Meaning string
}

// Commands are the offline subcommands render, snapshot and simulate, each with the flag set it
// parses its arguments with; their help goes to help.
func Commands(help io.Writer) []Command {
	render, _ := renderFlags(help)
	snapshot, _ := snapshotFlags(help)
	return []Command{
		{Name: "render", Flags: render, ExitCodes: []ExitCode{
			{0, "Every SchedulerProfile and Scheduler of the file is valid; their configurations are on standard output. Advice, on standard error, does not change the code. -h prints the help with this code."},
			{exitError, "A SchedulerProfile or Scheduler is invalid (the reasons are on standard error, the valid ones' configurations on standard output), or the file cannot be read or holds no SchedulerProfile, or the snapshot or the cluster cannot be read."},
			{exitUsage, "Bad flags: no -f, an argument besides the flags, --cluster with --kubeconfig, an invalid --max-scheduler-cpu or --max-scheduler-memory."},
		}},
		{Name: "snapshot", Flags: snapshot, ExitCodes: []ExitCode{
			{0, "The snapshot is written; a line on standard error counts its objects and bytes. -h prints the help with this code."},
			{exitError, "The kubeconfig or the cluster cannot be read, or the file cannot be written."},
			{exitUsage, "Bad flags, or an argument besides the flags."},
		}},
		{Name: "simulate", Flags: simulateFlags(&simulateOptions{}, help), ExitCodes: []ExitCode{
			{0, "The report is printed. -h prints the help with this code."},
			{exitError, "A file, the snapshot or the cluster cannot be read, a profile is invalid, or a file of -f or --compare holds more than one SchedulerProfile or Scheduler to simulate."},
			{exitUsage, "Bad flags: no -f, neither or both of --cluster and --kubeconfig, an argument besides the flags, an -o other than text, json, yaml or html, a negative --cpu-limit."},
			{exitUnschedulable, "With --fail-on-unschedulable: the profile of -f left a pod unschedulable; the report is printed first."},
			{exitLimit, "A simulation reached --time-limit or --cpu-limit; the report says which and how many pods it decided. This code wins over the one of --fail-on-unschedulable."},
		}},
	}
}
