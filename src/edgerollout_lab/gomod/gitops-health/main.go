// Command gitops-health prints how Argo CD and Flux would judge the health of one DaemonSet.
//
// It reads the DaemonSet as JSON on standard input and runs the health customizations shipped in
// deploy/gitops with the interpreters those tools embed, set up the way they set them up:
//
//   - Argo CD: the `resource.customizations.health.apps_DaemonSet` script of an argocd-cm ConfigMap,
//     run by gopher-lua as util/lua/lua.go (VM.runLuaWithResourceActionParameters,
//     VM.ExecuteHealthLua) runs it: the object as the global `obj`, the package, base and table
//     libraries (all of them when `resource.customizations.useOpenLibs.apps_DaemonSet` is true), a
//     one-second deadline, and the returned table read as {status, message}.
//   - Flux: the `healthCheckExprs` entry for apps/v1 DaemonSet of a Kustomization, compiled and
//     evaluated as fluxcd/pkg runtime/cel does (NewExpression, StatusEvaluator.Evaluate): parsed,
//     not checked, in its environment, with the object's top-level fields as the variables.
//
// It prints one JSON object: {"argocd": {"status", "message"}, "flux": {"status"}}.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	lua "github.com/yuin/gopher-lua"
	luajson "layeh.com/gopher-json"
	"sigs.k8s.io/yaml"
)

const (
	healthKey      = "resource.customizations.health.apps_DaemonSet"
	useOpenLibsKey = "resource.customizations.useOpenLibs.apps_DaemonSet"
)

type argoHealth struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

type fluxHealth struct {
	Status string `json:"status"`
}

type verdict struct {
	Argo argoHealth `json:"argocd"`
	Flux fluxHealth `json:"flux"`
}

func main() {
	argocdCM := flag.String("argocd-cm", "", "the argocd-cm ConfigMap (YAML) holding the health script")
	kustomization := flag.String("flux-kustomization", "", "the Flux Kustomization (YAML) holding healthCheckExprs")
	flag.Parse()
	if err := run(*argocdCM, *kustomization, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gitops-health:", err)
		os.Exit(1)
	}
}

func run(argocdCM, kustomization string, in io.Reader, out io.Writer) error {
	raw, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	obj, err := decodeObject(raw)
	if err != nil {
		return fmt.Errorf("reading the DaemonSet on stdin: %w", err)
	}
	script, openLibs, err := readArgoCustomization(argocdCM)
	if err != nil {
		return err
	}
	exprs, err := readFluxExpressions(kustomization)
	if err != nil {
		return err
	}
	argo, err := argoResourceHealth(obj, script, openLibs)
	if err != nil {
		return fmt.Errorf("argo cd health script: %w", err)
	}
	flux, err := fluxStatus(obj, exprs)
	if err != nil {
		return fmt.Errorf("flux health check: %w", err)
	}
	return json.NewEncoder(out).Encode(verdict{Argo: argo, Flux: fluxHealth{Status: flux}})
}

// decodeObject reads JSON the way apimachinery's unstructured decoder does: whole numbers become
// int64, others float64, so both interpreters see the types they see in the tools.
func decodeObject(raw []byte) (map[string]any, error) {
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	var obj map[string]any
	if err := decoder.Decode(&obj); err != nil {
		return nil, err
	}
	converted, err := convertNumbers(obj)
	if err != nil {
		return nil, err
	}
	return converted.(map[string]any), nil
}

func convertNumbers(value any) (any, error) {
	switch v := value.(type) {
	case map[string]any:
		for key, item := range v {
			converted, err := convertNumbers(item)
			if err != nil {
				return nil, err
			}
			v[key] = converted
		}
		return v, nil
	case []any:
		for i, item := range v {
			converted, err := convertNumbers(item)
			if err != nil {
				return nil, err
			}
			v[i] = converted
		}
		return v, nil
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		return v.Float64()
	default:
		return v, nil
	}
}

func readYAML(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	asJSON, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return decodeObject(asJSON)
}

// readArgoCustomization returns the health script and its useOpenLibs flag, read as Argo CD's
// settings manager reads them (util/settings/settings.go: the value of useOpenLibs is a strconv bool).
func readArgoCustomization(path string) (string, bool, error) {
	cm, err := readYAML(path)
	if err != nil {
		return "", false, err
	}
	data, _ := cm["data"].(map[string]any)
	script, _ := data[healthKey].(string)
	if script == "" {
		return "", false, fmt.Errorf("%s: no %s", path, healthKey)
	}
	openLibs := false
	if flag, ok := data[useOpenLibsKey].(string); ok {
		if openLibs, err = strconv.ParseBool(flag); err != nil {
			return "", false, fmt.Errorf("%s: %s: %w", path, useOpenLibsKey, err)
		}
	}
	return script, openLibs, nil
}

// argoResourceHealth runs the script as Argo CD's lua.VM does for a health customization.
func argoResourceHealth(obj map[string]any, script string, openLibs bool) (argoHealth, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: !openLibs})
	defer l.Close()
	// Argo CD also opens its own safe subset of `os` (time, date); the script uses none of it.
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return argoHealth{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", decodeValue(l, obj))
	if err := l.DoString(script); err != nil {
		return argoHealth{}, err
	}
	returned := l.Get(-1)
	if returned.Type() != lua.LTTable {
		return argoHealth{}, fmt.Errorf("expect table output from Lua script, not %s", returned.Type())
	}
	encoded, err := luajson.Encode(returned)
	if err != nil {
		return argoHealth{}, err
	}
	var health argoHealth
	if err := json.Unmarshal(encoded, &health); err != nil {
		return argoHealth{}, err
	}
	switch health.Status {
	case "Unknown", "Progressing", "Suspended", "Healthy", "Degraded", "Missing":
		return health, nil
	default:
		return argoHealth{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
}

// decodeValue turns the object into Lua values as Argo CD's util/lua decodeValue does.
func decodeValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		table := l.CreateTable(len(v), 0)
		for _, item := range v {
			table.Append(decodeValue(l, item))
		}
		return table
	case map[string]any:
		table := l.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetH(lua.LString(key), decodeValue(l, item))
		}
		return table
	}
	return lua.LNil
}

type healthExpressions struct {
	current, inProgress, failed string
}

// readFluxExpressions returns the healthCheckExprs entry for apps/v1 DaemonSet.
func readFluxExpressions(path string) (healthExpressions, error) {
	doc, err := readYAML(path)
	if err != nil {
		return healthExpressions{}, err
	}
	spec, _ := doc["spec"].(map[string]any)
	checks, _ := spec["healthCheckExprs"].([]any)
	for _, item := range checks {
		check, _ := item.(map[string]any)
		if check["apiVersion"] == "apps/v1" && check["kind"] == "DaemonSet" {
			current, _ := check["current"].(string)
			inProgress, _ := check["inProgress"].(string)
			failed, _ := check["failed"].(string)
			return healthExpressions{current: current, inProgress: inProgress, failed: failed}, nil
		}
	}
	return healthExpressions{}, fmt.Errorf("%s: no healthCheckExprs entry for apps/v1 DaemonSet", path)
}

// newExpression parses an expression in the environment of fluxcd/pkg runtime/cel NewExpression
// (without WithCompile, as NewStatusEvaluator calls it).
func newExpression(expr string) (cel.Program, error) {
	env, err := cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
	if err != nil {
		return nil, err
	}
	parsed, issues := env.Parse(expr)
	if issues != nil {
		return nil, fmt.Errorf("failed to parse the CEL expression '%s': %s", expr, issues.String())
	}
	return env.Program(parsed, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
}

// fluxStatus is StatusEvaluator.Evaluate: a generation check, then inProgress, failed, current in
// that order; when none holds, InProgress.
func fluxStatus(obj map[string]any, exprs healthExpressions) (string, error) {
	if exprs.current == "" {
		return "", errors.New("expression Current not specified")
	}
	metadata, _ := obj["metadata"].(map[string]any)
	status, _ := obj["status"].(map[string]any)
	observed, hasObserved := status["observedGeneration"].(int64)
	generation, hasGeneration := metadata["generation"].(int64)
	if hasObserved && hasGeneration && observed != generation {
		return "InProgress", nil
	}
	for _, step := range []struct {
		expr, status string
	}{
		{exprs.inProgress, "InProgress"},
		{exprs.failed, "Failed"},
		{exprs.current, "Current"},
	} {
		if step.expr == "" {
			continue
		}
		prog, err := newExpression(step.expr)
		if err != nil {
			return "", err
		}
		val, _, err := prog.ContextEval(context.Background(), obj)
		if err != nil {
			return "", fmt.Errorf("failed to evaluate the CEL expression '%s': %w", strings.TrimSpace(step.expr), err)
		}
		result, ok := val.(types.Bool)
		if !ok {
			return "", fmt.Errorf("failed to evaluate CEL expression as boolean: '%s'", step.expr)
		}
		if result {
			return step.status, nil
		}
	}
	return "InProgress", nil
}
