package format

import (
	"fmt"
	"strconv"
	"strings"
)

// Role says what a tensor of a QSF file is.
type Role uint16

// Tensor roles. Roles 1–2 belong to the embedding section, 16–39 to a
// layer and 64–67 to the final section; RoleNamed tensors carry their GGUF
// name.
const (
	RoleTokenEmbd      Role = 1
	RolePosEmbd        Role = 2
	RoleAttnNorm       Role = 16
	RoleAttnNormB      Role = 17
	RoleQ              Role = 18
	RoleK              Role = 19
	RoleV              Role = 20
	RoleQKV            Role = 21
	RoleQB             Role = 22
	RoleKB             Role = 23
	RoleVB             Role = 24
	RoleQKVB           Role = 25
	RoleQNorm          Role = 26
	RoleKNorm          Role = 27
	RoleO              Role = 28
	RoleOB             Role = 29
	RoleFFNNorm        Role = 30
	RoleFFNNormB       Role = 31
	RoleGate           Role = 32
	RoleUp             Role = 33
	RoleDown           Role = 34
	RoleGateB          Role = 35
	RoleUpB            Role = 36
	RoleDownB          Role = 37
	RolePostAttnNorm   Role = 38
	RolePostFFNNorm    Role = 39
	RoleOutputNorm     Role = 64
	RoleOutputNormB    Role = 65
	RoleOutput         Role = 66
	RoleOutputB        Role = 67
	RoleNamed          Role = 65535
	roleFirstLayer          = RoleAttnNorm
	roleLastLayer           = RolePostFFNNorm
	roleFirstFinal          = RoleOutputNorm
	roleLastFinal           = RoleOutputB
	roleFirstEmbedding      = RoleTokenEmbd
	roleLastEmbedding       = RolePosEmbd
)

// roleNames are the GGUF names of the roles; layer roles omit "blk.N.".
var roleNames = map[Role]string{
	RoleTokenEmbd: "token_embd.weight", RolePosEmbd: "position_embd.weight",
	RoleAttnNorm: "attn_norm.weight", RoleAttnNormB: "attn_norm.bias",
	RoleQ: "attn_q.weight", RoleK: "attn_k.weight", RoleV: "attn_v.weight", RoleQKV: "attn_qkv.weight",
	RoleQB: "attn_q.bias", RoleKB: "attn_k.bias", RoleVB: "attn_v.bias", RoleQKVB: "attn_qkv.bias",
	RoleQNorm: "attn_q_norm.weight", RoleKNorm: "attn_k_norm.weight",
	RoleO: "attn_output.weight", RoleOB: "attn_output.bias",
	RoleFFNNorm: "ffn_norm.weight", RoleFFNNormB: "ffn_norm.bias",
	RoleGate: "ffn_gate.weight", RoleUp: "ffn_up.weight", RoleDown: "ffn_down.weight",
	RoleGateB: "ffn_gate.bias", RoleUpB: "ffn_up.bias", RoleDownB: "ffn_down.bias",
	RolePostAttnNorm: "post_attention_norm.weight", RolePostFFNNorm: "post_ffw_norm.weight",
	RoleOutputNorm: "output_norm.weight", RoleOutputNormB: "output_norm.bias",
	RoleOutput: "output.weight", RoleOutputB: "output.bias",
}

var rolesByName = func() map[string]Role {
	m := make(map[string]Role, len(roleNames))
	for r, n := range roleNames {
		m[n] = r
	}
	return m
}()

// String returns the role's name, e.g. "attn_q".
func (r Role) String() string {
	if r == RoleNamed {
		return "named"
	}
	if n, ok := roleNames[r]; ok {
		return strings.TrimSuffix(n, ".weight")
	}
	return fmt.Sprintf("role(%d)", uint16(r))
}

// known reports whether r is a role of version 1.
func (r Role) known() bool { _, ok := roleNames[r]; return ok || r == RoleNamed }

// InLayer reports whether r is the role of a layer tensor.
func (r Role) InLayer() bool { return r.isLayer() }

// InFinal reports whether r is the role of a final-section tensor.
func (r Role) InFinal() bool { return r.isFinal() }

func (r Role) isLayer() bool     { return r >= roleFirstLayer && r <= roleLastLayer }
func (r Role) isFinal() bool     { return r >= roleFirstFinal && r <= roleLastFinal }
func (r Role) isEmbedding() bool { return r >= roleFirstEmbedding && r <= roleLastEmbedding }

// TensorName returns the GGUF name of a tensor of role r in layer layer
// (ignored outside layers). It returns "" for RoleNamed and unknown roles.
func TensorName(r Role, layer int) string {
	n, ok := roleNames[r]
	if !ok {
		return ""
	}
	if r.isLayer() {
		return "blk." + strconv.Itoa(layer) + "." + n
	}
	return n
}

// QSFPlacement is where a tensor goes in a QSF file.
type QSFPlacement int

// Placements returned by ClassifyTensor.
const (
	PlaceEmbedding QSFPlacement = iota
	PlaceLayer
	PlaceFinal
)

// ClassifyTensor maps a GGUF tensor name to its QSF role and place: a
// known name gets its role, any other name RoleNamed (in layer N when it
// starts with "blk.N.", else in the embedding section). layer is the layer
// number for PlaceLayer.
func ClassifyTensor(name string) (role Role, place QSFPlacement, layer int) {
	if rest, ok := strings.CutPrefix(name, "blk."); ok {
		if num, suffix, ok := strings.Cut(rest, "."); ok {
			if n, err := strconv.Atoi(num); err == nil && n >= 0 && strconv.Itoa(n) == num {
				if r, ok := rolesByName[suffix]; ok && r.isLayer() {
					return r, PlaceLayer, n
				}
				return RoleNamed, PlaceLayer, n
			}
		}
	}
	if r, ok := rolesByName[name]; ok {
		switch {
		case r.isEmbedding():
			return r, PlaceEmbedding, 0
		case r.isFinal():
			return r, PlaceFinal, 0
		}
	}
	return RoleNamed, PlaceEmbedding, 0
}
