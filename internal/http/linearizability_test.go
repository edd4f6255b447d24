package http_test

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/planserver/planserver/internal/apitest"
)

// TestRegisterModelRejectsALostUpdate makes sure the model can fail: two
// conditional writes on the same revision cannot both succeed.
func TestRegisterModelRejectsALostUpdate(t *testing.T) {
	h := []porcupine.Operation{
		{ClientId: 0, Input: apitest.RegInput{Plan: "p", Kind: apitest.OpCreate, Content: "a"}, Call: 0, Output: apitest.RegOutput{OK: true, Rev: 1}, Return: 1},
		{ClientId: 0, Input: apitest.RegInput{Plan: "p", Kind: apitest.OpCAS, Expect: 1, Content: "b"}, Call: 2, Output: apitest.RegOutput{OK: true, Rev: 2}, Return: 3},
		{ClientId: 1, Input: apitest.RegInput{Plan: "p", Kind: apitest.OpCAS, Expect: 1, Content: "c"}, Call: 2, Output: apitest.RegOutput{OK: true, Rev: 2}, Return: 4},
	}
	if porcupine.CheckOperations(apitest.RegisterModel, h) {
		t.Fatal("a lost update was judged linearizable")
	}
	h[2].Output = apitest.RegOutput{OK: false}
	if !porcupine.CheckOperations(apitest.RegisterModel, h) {
		t.Fatal("a clean conflict was judged not linearizable")
	}
}

// TestSharedPlansAreLinearizable has several clients create, conditionally
// write, blindly write and read a few plans through the real HTTP server,
// records every operation's real-time interval, and checks the history
// against the versioned-register model.
func TestSharedPlansAreLinearizable(t *testing.T) {
	env := apitest.New(t)
	duration := apitest.StressDuration(t, 1500*time.Millisecond)
	history := apitest.RegisterClients(t, 6, 7, []string{"lin-a", "lin-b", "lin-c"}, duration, 0,
		func(_ *rand.Rand, in apitest.RegInput) (apitest.RegOutput, error) { return doRegister(t, env, in), nil })
	apitest.CheckLinearizable(t, history)
	t.Logf("%d operations linearizable", len(history))
}

// doRegister performs one register operation over HTTP.
func doRegister(t *testing.T, env *apitest.Env, in apitest.RegInput) apitest.RegOutput {
	path := "/v1/plans/" + in.Plan
	if in.Kind == apitest.OpGet {
		r := env.Call("GET", path, nil)
		switch r.Status {
		case http.StatusOK:
			var p struct {
				Revision int64  `json:"revision"`
				Content  string `json:"content"`
			}
			r.JSON(t, &p)
			return apitest.RegOutput{OK: true, Rev: p.Revision, Content: p.Content}
		case http.StatusNotFound:
			return apitest.RegOutput{}
		}
		t.Errorf("GET %s: %d %s", path, r.Status, r.Body)
		return apitest.RegOutput{}
	}
	var header []string
	switch in.Kind {
	case apitest.OpCreate:
		header = []string{"If-None-Match", "*"}
	case apitest.OpCAS:
		header = []string{"If-Match", strconv.Quote(strconv.FormatInt(in.Expect, 10))}
	}
	r := env.Call("PUT", path, map[string]string{"content": in.Content}, header...)
	switch r.Status {
	case http.StatusOK, http.StatusCreated:
		rev, err := strconv.ParseInt(strings.Trim(r.Header.Get("ETag"), `"`), 10, 64)
		if err != nil {
			t.Errorf("PUT %s: ETag %q", path, r.Header.Get("ETag"))
		}
		return apitest.RegOutput{OK: true, Rev: rev}
	case http.StatusPreconditionFailed:
		return apitest.RegOutput{}
	}
	t.Errorf("PUT %s: %d %s", path, r.Status, r.Body)
	return apitest.RegOutput{}
}
