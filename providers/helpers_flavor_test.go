package providers

import "github.com/consultmcp/consult/internal/testkit/fake"

func flavorFor(f fake.Flavor) flavorCase {
	for _, fc := range flavors {
		if fc.flavor == f {
			return fc
		}
	}
	panic("no flavor")
}
