/*
 * The zygote's program (tregd/exec/zygote.c, linked statically), in
 * tregd's read-only data: exec hands it to the zygote in a sealed memfd
 * (exec_zygote.c), so there is no second file to install or to replace.
 */
	.section .rodata
	.balign 16
	.globl	zyg_prog
	.globl	zyg_prog_end
zyg_prog:
	.incbin	"tregd/exec/zygote/tregd-zygote"
zyg_prog_end:
	.section .note.GNU-stack,"",@progbits
