package qsf

import (
	"runtime/debug"
	"testing"
)

func TestModuleVersion(t *testing.T) {
	cases := []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Path: modulePath}}, "(devel)"},
		{debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v9.9.9"},
			Deps: []*debug.Module{{Path: "other", Version: "v0.1.0"}, {Path: modulePath, Version: "v0.4.0"}}}, "v0.4.0"},
		{debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.4.0", Replace: &debug.Module{Path: "../qsf", Version: "v0.4.1"}}}}, "v0.4.1"},
		{debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}}, "(devel)"},
	}
	for _, tc := range cases {
		if got := moduleVersion(&tc.bi); got != tc.want {
			t.Errorf("moduleVersion(%+v) = %q, want %q", tc.bi.Main, got, tc.want)
		}
	}
	if Version() == "" {
		t.Error("Version() is empty")
	}
}
