package main

import (
	"fmt"
	"go/ast"
	"go/parser"
)

// frame returns the size of a function's arguments and results in Go's
// arm64 ABI0 stack layout, for its TEXT line: each argument at its own
// alignment, the results from the next multiple of 8. go vet's asmdecl
// check holds the generated offsets to the same layout.
func frame(params, results string) int {
	e, err := parser.ParseExpr("func(" + params + ") " + results)
	if err != nil {
		panic(err)
	}
	ft := e.(*ast.FuncType)
	off := fields(0, ft.Params)
	if ft.Results == nil || len(ft.Results.List) == 0 {
		return off // no results: the arguments' own size (asmdecl's too)
	}
	off = (off + 7) &^ 7
	return fields(off, ft.Results)
}

func fields(off int, list *ast.FieldList) int {
	if list == nil {
		return off
	}
	for _, f := range list.List {
		size, align := typeSize(f.Type)
		for range max(1, len(f.Names)) {
			off = (off+align-1)&^(align-1) + size
		}
	}
	return off
}

func typeSize(t ast.Expr) (size, align int) {
	switch t := t.(type) {
	case *ast.ArrayType:
		if t.Len == nil {
			return 24, 8 // a slice: pointer, length, capacity
		}
	case *ast.Ident:
		switch t.Name {
		case "int", "uint", "uintptr", "int64", "uint64", "float64":
			return 8, 8
		case "int32", "uint32", "float32":
			return 4, 4
		case "byte", "uint8", "int8", "bool":
			return 1, 1
		}
	}
	panic(fmt.Sprintf("frame: no layout for %T %v", t, t))
}
