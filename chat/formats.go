package chat

import "strings"

// writer writes a conversation in one format. Roles count as markup (they
// are part of the format's special tokens in several formats, e.g. phi3's
// "<|user|>"); contents are plain text.
type writer func(b *builder, msgs []Message, addAssistant bool)

// writers holds every built-in format, as llm_chat_apply_template writes
// it.
var writers = map[Format]writer{
	ChatML:          writeChatML,
	Llama2:          writeLlama2(Llama2),
	Llama2Sys:       writeLlama2(Llama2Sys),
	Llama2SysBOS:    writeLlama2(Llama2SysBOS),
	Llama2SysStrip:  writeLlama2(Llama2SysStrip),
	MistralV1:       writeMistral(MistralV1),
	MistralV3:       writeMistral(MistralV3),
	MistralV3Tekken: writeMistral(MistralV3Tekken),
	MistralV7:       writeMistralV7(" "),
	MistralV7Tekken: writeMistralV7(""),
	Phi3:            writeTagged("<|", "|>\n", "<|end|>\n", "<|assistant|>\n"),
	Phi4:            writePhi4,
	Falcon3:         writeTagged("<|", "|>\n", "\n", "<|assistant|>\n"),
	Zephyr:          writeTagged("<|", "|>\n", "<|endoftext|>\n", "<|assistant|>\n"),
	Monarch:         writeMonarch,
	Gemma:           writeGemma,
	Orion:           writeOrion,
	OpenChat:        writeOpenChat,
	Vicuna:          writeVicuna(false),
	VicunaOrca:      writeVicuna(true),
	DeepSeek:        writeDeepSeek,
	DeepSeek2:       writeDeepSeek2,
	DeepSeek3:       writeDeepSeek3,
	CommandR:        writeCommandR,
	Llama3:          writeHeader("<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>"),
	Llama4:          writeHeader("<|header_start|>", "<|header_end|>\n\n", "<|eot|>"),
	ChatGLM3:        writeGLM("[gMASK]sop", "\n ", "<|assistant|>"),
	ChatGLM4:        writeGLM("[gMASK]<sop>", "\n", "<|assistant|>"), // b4748: no newline after the assistant tag
	GLMEdge:         writeGLM("", "\n", "<|assistant|>"),
	MiniCPM:         writeMiniCPM,
	Exaone3:         writeExaone(false),
	Exaone4:         writeExaone(true),
	RWKVWorld:       writeRWKV,
	Granite:         writeGranite,
	GigaChat:        writeGigaChat,
	Megrez:          writeMegrez,
	Yandex:          writeYandex,
	Bailing:         writeBailing,
	SmolVLM:         writeSmolVLM,
}

func writeChatML(b *builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		b.markup("<|im_start|>", m.Role, "\n")
		b.content(m.Content)
		b.markup("<|im_end|>\n")
	}
	if addAssistant {
		b.markup("<|im_start|>assistant\n")
	}
}

func writePhi4(b *builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		b.markup("<|im_start|>", m.Role, "<|im_sep|>")
		b.content(m.Content)
		b.markup("<|im_end|>")
	}
	if addAssistant {
		b.markup("<|im_start|>assistant<|im_sep|>")
	}
}

// writeTagged writes open + role + close, the content and end for every
// message (phi3, falcon3, zephyr).
func writeTagged(open, close, end, assistant string) writer {
	return func(b *builder, msgs []Message, addAssistant bool) {
		for _, m := range msgs {
			b.markup(open, m.Role, close)
			b.content(m.Content)
			b.markup(end)
		}
		if addAssistant {
			b.markup(assistant)
		}
	}
}

// writeHeader writes llama3-style turns: header, trimmed content, end.
func writeHeader(open, close, end string) writer {
	return func(b *builder, msgs []Message, addAssistant bool) {
		for _, m := range msgs {
			b.markup(open, m.Role, close)
			b.content(trim(m.Content))
			b.markup(end)
		}
		if addAssistant {
			b.markup(open, "assistant", close)
		}
	}
}

func writeMistralV7(space string) writer {
	return func(b *builder, msgs []Message, _ bool) {
		for _, m := range msgs {
			switch m.Role {
			case "system":
				b.markup("[SYSTEM_PROMPT]", space)
				b.content(m.Content)
				b.markup("[/SYSTEM_PROMPT]")
			case "user":
				b.markup("[INST]", space)
				b.content(m.Content)
				b.markup("[/INST]")
			default:
				b.markup(space)
				b.content(m.Content)
				b.markup("</s>")
			}
		}
	}
}

func writeMistral(f Format) writer {
	leading, trailing := "", " "
	if f == MistralV1 {
		leading = " "
	}
	if f == MistralV3Tekken {
		trailing = ""
	}
	trimAssistant := f == MistralV3
	return func(b *builder, msgs []Message, _ bool) {
		inTurn := false
		for _, m := range msgs {
			if !inTurn {
				b.markup(leading, "[INST]", trailing)
				inTurn = true
			}
			switch m.Role {
			case "system":
				b.content(m.Content)
				b.markup("\n\n")
			case "user":
				b.content(m.Content)
				b.markup(leading, "[/INST]")
			default:
				c := m.Content
				if trimAssistant {
					c = trim(c)
				}
				b.markup(trailing)
				b.content(c)
				b.markup("</s>")
				inTurn = false
			}
		}
	}
}

func writeLlama2(f Format) writer {
	system := f != Llama2
	bosInside := f == Llama2SysBOS
	strip := f == Llama2SysStrip
	return func(b *builder, msgs []Message, _ bool) {
		inTurn := true // no BOS at the beginning
		b.markup("[INST] ")
		for _, m := range msgs {
			c := m.Content
			if strip {
				c = trim(c)
			}
			if !inTurn {
				inTurn = true
				if bosInside {
					b.markup("<s>[INST] ")
				} else {
					b.markup("[INST] ")
				}
			}
			switch m.Role {
			case "system":
				if system {
					b.markup("<<SYS>>\n")
					b.content(c)
					b.markup("\n<</SYS>>\n\n")
				} else {
					b.content(c)
					b.markup("\n")
				}
			case "user":
				b.content(c)
				b.markup(" [/INST]")
			default:
				b.content(c)
				b.markup("</s>")
				inTurn = false
			}
		}
	}
}

func writeMonarch(b *builder, msgs []Message, addAssistant bool) {
	for i, m := range msgs {
		if i > 0 {
			b.markup("<s>")
		}
		b.markup(m.Role, "\n")
		b.content(m.Content)
		b.markup("</s>\n")
	}
	if addAssistant {
		b.markup("<s>assistant\n")
	}
}

func writeGemma(b *builder, msgs []Message, addAssistant bool) {
	system := ""
	for _, m := range msgs {
		if m.Role == "system" {
			// Gemma has no system turn: it joins the next user turn.
			system += trim(m.Content)
			continue
		}
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		b.markup("<start_of_turn>", role, "\n")
		if system != "" && role != "model" {
			b.content(system)
			b.markup("\n\n")
			system = ""
		}
		b.content(trim(m.Content))
		b.markup("<end_of_turn>\n")
	}
	if addAssistant {
		b.markup("<start_of_turn>model\n")
	}
}

func writeOrion(b *builder, msgs []Message, _ bool) {
	system := ""
	for _, m := range msgs {
		switch m.Role {
		case "system":
			system += m.Content
		case "user":
			b.markup("Human: ")
			if system != "" {
				b.content(system)
				b.markup("\n\n")
				system = ""
			}
			b.content(m.Content)
			b.markup("\n\nAssistant: </s>")
		default:
			b.content(m.Content)
			b.markup("</s>")
		}
	}
}

func writeOpenChat(b *builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		if m.Role == "system" {
			b.content(m.Content)
			b.markup("<|end_of_turn|>")
			continue
		}
		role := m.Role
		if role != "" {
			role = strings.ToUpper(role[:1]) + role[1:]
		}
		b.markup("GPT4 Correct ", role, ": ")
		b.content(m.Content)
		b.markup("<|end_of_turn|>")
	}
	if addAssistant {
		b.markup("GPT4 Correct Assistant:")
	}
}

func writeVicuna(orca bool) writer {
	return func(b *builder, msgs []Message, addAssistant bool) {
		for _, m := range msgs {
			switch m.Role {
			case "system":
				if orca {
					b.markup("SYSTEM: ")
					b.content(m.Content)
					b.markup("\n")
				} else {
					b.content(m.Content)
					b.markup("\n\n")
				}
			case "user":
				b.markup("USER: ")
				b.content(m.Content)
				b.markup("\n")
			case "assistant":
				b.markup("ASSISTANT: ")
				b.content(m.Content)
				b.markup("</s>\n")
			}
		}
		if addAssistant {
			b.markup("ASSISTANT:")
		}
	}
}

func writeDeepSeek(b *builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		switch m.Role {
		case "system":
			b.content(m.Content)
		case "user":
			b.markup("### Instruction:\n")
			b.content(m.Content)
			b.markup("\n")
		case "assistant":
			b.markup("### Response:\n")
			b.content(m.Content)
			b.markup("\n<|EOT|>\n")
		}
	}
	if addAssistant {
		b.markup("### Response:\n")
	}
}

func writeDeepSeek2(b *builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		switch m.Role {
		case "system":
			b.content(m.Content)
			b.markup("\n\n")
		case "user":
			b.markup("User: ")
			b.content(m.Content)
			b.markup("\n\n")
		case "assistant":
			b.markup("Assistant: ")
			b.content(m.Content)
			b.markup("<｜end▁of▁sentence｜>")
		}
	}
	if addAssistant {
		b.markup("Assistant:")
	}
}

func writeDeepSeek3(b *builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		switch m.Role {
		case "system":
			b.content(m.Content)
			b.markup("\n\n")
		case "user":
			b.markup("<｜User｜>")
			b.content(m.Content)
		case "assistant":
			b.markup("<｜Assistant｜>")
			b.content(m.Content)
			b.markup("<｜end▁of▁sentence｜>")
		}
	}
	if addAssistant {
		b.markup("<｜Assistant｜>")
	}
}

func writeCommandR(b *builder, msgs []Message, addAssistant bool) {
	tokens := map[string]string{"system": "<|SYSTEM_TOKEN|>", "user": "<|USER_TOKEN|>", "assistant": "<|CHATBOT_TOKEN|>"}
	for _, m := range msgs {
		tok, ok := tokens[m.Role]
		if !ok {
			continue
		}
		b.markup("<|START_OF_TURN_TOKEN|>", tok)
		b.content(trim(m.Content))
		b.markup("<|END_OF_TURN_TOKEN|>")
	}
	if addAssistant {
		b.markup("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>")
	}
}

// writeGLM writes the ChatGLM family: a prefix, then "<|role|>" + sep +
// content per message.
func writeGLM(prefix, sep, assistant string) writer {
	return func(b *builder, msgs []Message, addAssistant bool) {
		b.markup(prefix)
		for _, m := range msgs {
			b.markup("<|", m.Role, "|>", sep)
			b.content(m.Content)
		}
		if addAssistant {
			b.markup(assistant)
		}
	}
}

func writeMiniCPM(b *builder, msgs []Message, _ bool) {
	for _, m := range msgs {
		if m.Role == "user" {
			b.markup("<用户>")
			b.content(trim(m.Content))
			b.markup("<AI>")
		} else {
			b.content(trim(m.Content))
		}
	}
}

func writeExaone(tool bool) writer {
	return func(b *builder, msgs []Message, addAssistant bool) {
		for _, m := range msgs {
			switch {
			case m.Role == "system":
				b.markup("[|system|]")
				b.content(trim(m.Content))
				b.markup("[|endofturn|]\n")
			case m.Role == "user":
				b.markup("[|user|]")
				b.content(trim(m.Content))
				b.markup("\n")
			case m.Role == "assistant":
				b.markup("[|assistant|]")
				b.content(trim(m.Content))
				b.markup("[|endofturn|]\n")
			case m.Role == "tool" && tool:
				b.markup("[|tool|]")
				b.content(trim(m.Content))
				b.markup("[|endofturn|]\n")
			}
		}
		if addAssistant {
			b.markup("[|assistant|]")
		}
	}
}

func writeRWKV(b *builder, msgs []Message, _ bool) {
	for i, m := range msgs {
		switch m.Role {
		case "system":
			b.markup("System: ")
			b.content(trim(m.Content))
			b.markup("\n\n")
		case "user":
			b.markup("User: ")
			b.content(trim(m.Content))
			b.markup("\n\n")
			if i == len(msgs)-1 {
				b.markup("Assistant:")
			}
		case "assistant":
			b.markup("Assistant: ")
			b.content(trim(m.Content))
			b.markup("\n\n")
		}
	}
}

func writeGranite(b *builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		b.markup("<|start_of_role|>", m.Role, "<|end_of_role|>")
		if m.Role == "assistant_tool_call" {
			b.markup("<|tool_call|>")
		}
		b.content(m.Content)
		b.markup("<|end_of_text|>\n")
	}
	if addAssistant {
		b.markup("<|start_of_role|>assistant<|end_of_role|>\n")
	}
}

func writeGigaChat(b *builder, msgs []Message, addAssistant bool) {
	b.markup("<s>")
	rest := msgs
	if len(msgs) > 0 && msgs[0].Role == "system" {
		b.content(msgs[0].Content)
		b.markup("<|message_sep|>")
		rest = msgs[1:]
	}
	for _, m := range rest {
		switch m.Role {
		case "user":
			b.markup("user<|role_sep|>")
			b.content(m.Content)
			b.markup("<|message_sep|>available functions<|role_sep|>[]<|message_sep|>")
		case "assistant":
			b.markup("assistant<|role_sep|>")
			b.content(m.Content)
			b.markup("<|message_sep|>")
		}
	}
	if addAssistant {
		b.markup("assistant<|role_sep|>")
	}
}

func writeMegrez(b *builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		b.markup("<|role_start|>", m.Role, "<|role_end|>")
		b.content(m.Content)
		b.markup("<|turn_end|>")
	}
	if addAssistant {
		b.markup("<|role_start|>assistant<|role_end|>")
	}
}

func writeYandex(b *builder, msgs []Message, addAssistant bool) {
	b.markup("<s>")
	for _, m := range msgs {
		switch m.Role {
		case "user":
			b.markup(" Пользователь: ")
			b.content(m.Content)
			b.markup("\n\n")
		case "assistant":
			b.markup(" Ассистент: ")
			b.content(m.Content)
			b.markup("\n\n")
		}
	}
	if addAssistant {
		b.markup(" Ассистент:[SEP]")
	}
}

func writeBailing(b *builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		role := strings.ToUpper(m.Role)
		if m.Role == "user" {
			role = "HUMAN"
		}
		b.markup("<role>", role, "</role>")
		b.content(m.Content)
	}
	if addAssistant {
		b.markup("<role>ASSISTANT</role>")
	}
}

func writeSmolVLM(b *builder, msgs []Message, addAssistant bool) {
	b.markup("<|im_start|>")
	for _, m := range msgs {
		switch m.Role {
		case "system":
			b.content(m.Content)
			b.markup("\n\n")
		case "user":
			b.markup("User: ")
			b.content(m.Content)
			b.markup("<end_of_utterance>\n")
		default:
			b.markup("Assistant: ")
			b.content(m.Content)
			b.markup("<end_of_utterance>\n")
		}
	}
	if addAssistant {
		b.markup("Assistant:")
	}
}

// EndOfTurn returns the texts that end a model's turn in format f (special
// tokens in the model's vocabulary, or plain stop text), besides the
// model's end-of-generation tokens.
func EndOfTurn(f Format) []string {
	switch f {
	case ChatML:
		return []string{"<|im_end|>"}
	case Phi4:
		return []string{"<|im_end|>"}
	case Phi3:
		return []string{"<|end|>"}
	case Zephyr:
		return []string{"<|endoftext|>"}
	case Gemma:
		return []string{"<end_of_turn>"}
	case Llama3:
		return []string{"<|eot_id|>"}
	case Llama4:
		return []string{"<|eot|>"}
	case OpenChat:
		return []string{"<|end_of_turn|>"}
	case DeepSeek:
		return []string{"<|EOT|>"}
	case DeepSeek2, DeepSeek3:
		return []string{"<｜end▁of▁sentence｜>"}
	case CommandR:
		return []string{"<|END_OF_TURN_TOKEN|>"}
	case Exaone3, Exaone4:
		return []string{"[|endofturn|]"}
	case Granite:
		return []string{"<|end_of_text|>"}
	case Megrez:
		return []string{"<|turn_end|>"}
	case GigaChat:
		return []string{"<|message_sep|>"}
	case SmolVLM:
		return []string{"<end_of_utterance>"}
	case ChatGLM3, ChatGLM4, GLMEdge:
		return []string{"<|user|>", "<|observation|>"}
	case Monarch, Orion, Vicuna, VicunaOrca, Llama2, Llama2Sys, Llama2SysBOS, Llama2SysStrip,
		MistralV1, MistralV3, MistralV3Tekken, MistralV7, MistralV7Tekken, Falcon3:
		return []string{"</s>"}
	}
	return nil
}
