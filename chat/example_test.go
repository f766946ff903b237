package chat_test

import (
	"fmt"

	"github.com/qsf-llm/qsf/chat"
)

func ExampleApply() {
	// A model's tokenizer.chat_template (here Llama 3's, abridged).
	tmpl := "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
	f, err := chat.Detect(tmpl)
	if err != nil {
		fmt.Println(err)
		return
	}
	text, _ := chat.Apply(f, []chat.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hi!"},
	}, true)
	fmt.Println(f)
	fmt.Printf("%q\n", text)
	// Output:
	// llama3
	// "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
}
