// placeholder: replaced by the impl engine adapter
