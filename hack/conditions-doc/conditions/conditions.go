// Package conditions reads the condition types and reasons of api/v1alpha1/conditions.go, with
// the kinds, condition types and statuses that each reason is set on, and renders them as the
// reference page docs/reference/conditions.md. The generator (hack/conditions-doc) and the doc
// tests (docs/docs_test.go) read the file through it, so that both take the same list.
//
// Each reason's doc comment ends with the sentence that says where it is set, for example
//
//	// Set on: SchedulerProfile ConfigValid=False, Degraded=True; Scheduler Degraded=True.
//
// and the const block that declares a reason is titled "Reasons of the <Type> condition", a
// type the reason is set on.
package conditions

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"slices"
	"strconv"
	"strings"
)

// kinds are the kinds that carry conditions, in the order the page names them.
var kinds = []string{"SchedulerProfile", "Scheduler"}

// statuses are the statuses a reason may go with.
var statuses = []string{"True", "False", "Unknown"}

// setOnPrefix starts the sentence of a reason's doc comment that says where it is set.
const setOnPrefix = "Set on: "

// Type is a condition type.
type Type struct {
	// Name is the type as it is written in a condition: "Available".
	Name string
	// Doc is the meaning, from the constant's doc comment.
	Doc string
}

// Use is one condition a reason is set on: a kind, a condition type and its status.
type Use struct {
	Kind, Type, Status string
}

// Reason is a condition reason.
type Reason struct {
	// Name is the reason as it is written in a condition: "NotServed".
	Name string
	// Doc is the meaning, from the constant's doc comment, without its "Set on:" sentence.
	Doc string
	// SetOn are the conditions the operator sets it on.
	SetOn []Use
}

// On tells whether the reason is set on the condition typ with status of kind.
func (r Reason) On(kind, typ, status string) bool {
	return slices.Contains(r.SetOn, Use{Kind: kind, Type: typ, Status: status})
}

// Conditions are the condition types and reasons of a file, in the order it declares them.
type Conditions struct {
	Types   []Type
	Reasons []Reason
}

// ReasonsOn returns the names of the reasons set on the condition typ with status of kind.
func (c *Conditions) ReasonsOn(kind, typ, status string) []string {
	var out []string
	for _, r := range c.Reasons {
		if r.On(kind, typ, status) {
			out = append(out, r.Name)
		}
	}
	return out
}

// Reason returns the reason named name.
func (c *Conditions) Reason(name string) (Reason, bool) {
	for _, r := range c.Reasons {
		if r.Name == name {
			return r, true
		}
	}
	return Reason{}, false
}

// Parse reads the condition types (constants named Condition*) and reasons (Reason*) of the Go
// file at path.
func Parse(path string) (*Conditions, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var c Conditions
	type declared struct {
		reason Reason
		block  string // the type the const block's title names; "" for the types
		pos    token.Position
	}
	var reasons []declared
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		title := strings.TrimSpace(gd.Doc.Text())
		if title == "" {
			return nil, fmt.Errorf("%s: a const block without a doc comment", fset.Position(gd.Pos()))
		}
		block := ""
		if rest, ok := strings.CutPrefix(title, "Reasons of the "); ok {
			block = strings.TrimSuffix(rest, " condition.")
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			pos := fset.Position(vs.Pos())
			name, value, doc, err := constant(vs)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", pos, err)
			}
			switch {
			case strings.HasPrefix(name, "Condition"):
				// "ConditionAvailable is True when ...": the table's row reads "True when ...".
				c.Types = append(c.Types, Type{Name: value, Doc: strings.TrimPrefix(doc, "Is ")})
			case strings.HasPrefix(name, "Reason"):
				if block == "" {
					return nil, fmt.Errorf("%s: %s is in a const block not titled \"Reasons of the <Type> condition.\"", pos, name)
				}
				meaning, setOn, ok := strings.Cut(doc, setOnPrefix)
				if !ok {
					return nil, fmt.Errorf("%s: the doc comment of %s does not end with %q", pos, name, setOnPrefix+"<Kind> <Type>=<Status>, ...; ...")
				}
				uses, err := parseSetOn(setOn)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", pos, name, err)
				}
				reasons = append(reasons, declared{reason: Reason{Name: value, Doc: strings.TrimSpace(meaning), SetOn: uses}, block: block, pos: pos})
			default:
				return nil, fmt.Errorf("%s: %s is neither a Condition* nor a Reason* constant", pos, name)
			}
		}
	}
	types := map[string]bool{}
	for _, t := range c.Types {
		types[t.Name] = true
	}
	for _, d := range reasons {
		inBlock := false
		for _, u := range d.reason.SetOn {
			if !types[u.Type] {
				return nil, fmt.Errorf("%s: %s is set on %s, which is not a condition type", d.pos, d.reason.Name, u.Type)
			}
			inBlock = inBlock || u.Type == d.block
		}
		if !inBlock {
			return nil, fmt.Errorf("%s: %s is declared among the reasons of %s, but is not set on it", d.pos, d.reason.Name, d.block)
		}
		c.Reasons = append(c.Reasons, d.reason)
	}
	return &c, nil
}

// constant returns the Go name, the string value and the doc comment (on one line, without the
// leading Go name) of a constant.
func constant(vs *ast.ValueSpec) (name, value, doc string, err error) {
	if len(vs.Names) != 1 || len(vs.Values) != 1 {
		return "", "", "", fmt.Errorf("one name and one value per constant")
	}
	name = vs.Names[0].Name
	lit, ok := vs.Values[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", "", "", fmt.Errorf("%s: a string literal per constant", name)
	}
	if value, err = strconv.Unquote(lit.Value); err != nil {
		return "", "", "", err
	}
	doc = strings.Join(strings.Fields(vs.Doc.Text()), " ")
	if doc == "" {
		return "", "", "", fmt.Errorf("%s has no doc comment", name)
	}
	// The comment starts with the Go name; the page names the value.
	doc = strings.TrimPrefix(doc, name+" ")
	return name, value, strings.ToUpper(doc[:1]) + doc[1:], nil
}

// parseSetOn reads "SchedulerProfile ConfigValid=False, Degraded=True; Scheduler Degraded=True.".
func parseSetOn(s string) ([]Use, error) {
	s, ok := strings.CutSuffix(strings.TrimSpace(s), ".")
	if !ok {
		return nil, fmt.Errorf("the %q sentence must end the doc comment, with a period", setOnPrefix)
	}
	var out []Use
	for part := range strings.SplitSeq(s, ";") {
		kind, conds, _ := strings.Cut(strings.TrimSpace(part), " ")
		if !slices.Contains(kinds, kind) {
			return nil, fmt.Errorf("%q: the kind must be one of %v", part, kinds)
		}
		for cond := range strings.SplitSeq(conds, ",") {
			typ, status, ok := strings.Cut(strings.TrimSpace(cond), "=")
			if !ok || typ == "" || !slices.Contains(statuses, status) {
				return nil, fmt.Errorf("%q: write <Type>=<Status>, the status one of %v", cond, statuses)
			}
			u := Use{Kind: kind, Type: typ, Status: status}
			if slices.Contains(out, u) {
				return nil, fmt.Errorf("%s %s=%s twice", kind, typ, status)
			}
			out = append(out, u)
		}
	}
	return out, nil
}

// Render writes the reference page: the condition types with the kinds that have them, then a
// section per type with every reason set on it, its status and the kinds.
func Render(w io.Writer, c *Conditions, source string) error {
	var b strings.Builder
	b.WriteString("# Conditions and reasons\n\n")
	fmt.Fprintf(&b, "This page is generated by `make generate` from [%s](../../%s) and must not be edited by hand.\n\n", source, source)
	b.WriteString("`kubectl describe sp <name>` and `kubectl describe sched <name>` show them; what to do about each is in\n[Troubleshooting](../tasks/troubleshooting.md).\n")
	b.WriteString("\n## Condition types\n\n| type | on | meaning |\n| --- | --- | --- |\n")
	for _, t := range c.Types {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", t.Name, strings.Join(c.kindsOf(t.Name), ", "), cell(t.Doc))
	}
	for _, t := range c.Types {
		fmt.Fprintf(&b, "\n## %s\n\n| reason | status | on | meaning |\n| --- | --- | --- | --- |\n", t.Name)
		for _, status := range statuses {
			for _, r := range c.Reasons {
				on := c.kindsOfReason(r, t.Name, status)
				if len(on) == 0 {
					continue
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Name, status, strings.Join(on, ", "), cell(r.Doc))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// kindsOf are the kinds that have the condition typ: those a reason of it is set on.
func (c *Conditions) kindsOf(typ string) []string {
	var out []string
	for _, kind := range kinds {
		for _, r := range c.Reasons {
			if slices.ContainsFunc(r.SetOn, func(u Use) bool { return u.Kind == kind && u.Type == typ }) {
				out = append(out, kind)
				break
			}
		}
	}
	return out
}

// kindsOfReason are the kinds on which r is set on the condition typ with status.
func (c *Conditions) kindsOfReason(r Reason, typ, status string) []string {
	var out []string
	for _, kind := range kinds {
		if r.On(kind, typ, status) {
			out = append(out, kind)
		}
	}
	return out
}

// cell escapes a table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", "\\|")
}
