package renderer

import (
	"fmt"
	"reflect"
	"text/template"
	"text/template/parse"
)

// Step instrumentation. The parsed templates get a call to the step
// function at the start of every template body and of every range body,
// and printing actions whose value is not known to be a plain string or
// number get a call that measures the value first. text/template has no
// hook of its own for either; the calls are nodes added to the parse trees
// after parsing (positions are the original ones, so errors point at the
// template's own line and column).
const (
	stepFunc  = "llmrenderStep"
	printFunc = "llmrenderPrint"
)

// instrument adds the budget calls to every template of the set that does
// not have them yet. scalar tells whether a function is known to return
// only strings, numbers or booleans.
func instrument(t *template.Template, scalar func(name string) bool) {
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Tree.Root == nil || isStepNode(first(tt.Tree.Root)) {
			continue
		}
		instrumentList(tt.Tree.Root, scalar)
		tt.Tree.Root.Nodes = append([]parse.Node{stepNode(tt.Tree.Root.Pos)}, tt.Tree.Root.Nodes...)
	}
}

func first(l *parse.ListNode) parse.Node {
	if len(l.Nodes) == 0 {
		return nil
	}
	return l.Nodes[0]
}

func instrumentList(l *parse.ListNode, scalar func(string) bool) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			guardPrint(n, scalar)
		case *parse.RangeNode:
			instrumentList(n.List, scalar)
			instrumentList(n.ElseList, scalar)
			n.List.Nodes = append([]parse.Node{stepNode(n.Pos)}, n.List.Nodes...)
		case *parse.IfNode:
			instrumentList(n.List, scalar)
			instrumentList(n.ElseList, scalar)
		case *parse.WithNode:
			instrumentList(n.List, scalar)
			instrumentList(n.ElseList, scalar)
		case *parse.ListNode:
			instrumentList(n, scalar)
		}
	}
}

// stepNode is {{ $llmrenderStep := llmrenderStep }}: a declaration, so
// nothing is printed.
func stepNode(pos parse.Pos) *parse.ActionNode {
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: &parse.PipeNode{
		NodeType: parse.NodePipe, Pos: pos,
		Decl: []*parse.VariableNode{{NodeType: parse.NodeVariable, Pos: pos, Ident: []string{"$" + stepFunc}}},
		Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{parse.NewIdentifier(stepFunc).SetPos(pos)}}},
	}}
}

func isStepNode(n parse.Node) bool {
	a, ok := n.(*parse.ActionNode)
	return ok && len(a.Pipe.Decl) == 1 && a.Pipe.Decl[0].Ident[0] == "$"+stepFunc
}

// guardPrint makes a printing action {{ x }} into {{ x | llmrenderPrint }}
// unless its last command is a function known to return a scalar.
func guardPrint(a *parse.ActionNode, scalar func(string) bool) {
	p := a.Pipe
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) == 0 {
		return
	}
	last := p.Cmds[len(p.Cmds)-1]
	if id, ok := last.Args[0].(*parse.IdentifierNode); ok && scalar(id.Ident) {
		return
	}
	switch last.Args[0].(type) {
	case *parse.StringNode, *parse.NumberNode, *parse.BoolNode:
		return
	}
	p.Cmds = append(p.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: a.Pos,
		Args: []parse.Node{parse.NewIdentifier(printFunc).SetPos(a.Pos)}})
}

// scalarResult tells whether a function's only result (besides an error)
// is a string, number or boolean, so printing it cannot run away.
func scalarResult(fn any) bool {
	t := reflect.TypeOf(fn)
	if t == nil || t.Kind() != reflect.Func || t.NumOut() == 0 {
		return false
	}
	switch t.Out(0).Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// printGuard is llmrenderPrint: it measures what an action is about to
// print and hands it on unchanged. A struct whose String method has a
// pointer receiver is handed on as a pointer to a copy, so that it prints
// as it would have without the guard (.Capabilities.KubeVersion).
func (b *budget) printGuard(v any) (reflect.Value, error) {
	switch v.(type) {
	case string, bool, int, int64, float64, nil:
		return reflect.ValueOf(v), nil
	}
	if err := b.value("printing", v); err != nil {
		return reflect.Value{}, err
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Struct && !rv.Type().Implements(stringerType) && reflect.PointerTo(rv.Type()).Implements(stringerType) {
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		return p, nil
	}
	return rv, nil
}

var stringerType = reflect.TypeFor[fmt.Stringer]()
