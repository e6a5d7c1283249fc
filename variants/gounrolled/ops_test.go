package gounrolled_test

import (
	"testing"

	"github.com/damascus-llm/damascus/variants/gounrolled"
	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

func TestRMSNorm(t *testing.T) { kerneltest.RMSNorm(t, gounrolled.RMSNorm) }
func TestSiLUMul(t *testing.T) { kerneltest.SiLUMul(t, gounrolled.SiLUMul) }
func TestSoftmax(t *testing.T) { kerneltest.Softmax(t, gounrolled.Softmax) }
func TestRoPE(t *testing.T)    { kerneltest.RoPE(t, gounrolled.RoPE) }
