package javatest

import (
	"os/exec"

	bw "github.com/bwmarrin/snowflake"
)

type execCmd = exec.Cmd

func snowflakeID(v int64) bw.ID { return bw.ID(v) }
