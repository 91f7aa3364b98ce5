import { ValidateBy, type ValidationArguments, type ValidationOptions } from 'class-validator';

/**
 * Characters that show nothing on their own: white space (U+0020, U+00A0, U+3000, ...), control
 * characters, format characters (zero-width spaces and joiners U+200B-U+200D, the byte order mark
 * U+FEFF, direction marks), the other default-ignorable code points (variation selectors, the Hangul
 * fillers U+115F, U+1160 and U+3164) and the Braille blank U+2800.
 */
const INVISIBLE = /^[\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2800]*$/u;

/** Whether `text` has at least one character that shows. */
export function hasVisibleCharacter(text: string): boolean {
  return !INVISIBLE.test(text);
}

/**
 * A name or identifier people read back: at least one visible character, so that `"   "` or
 * `"\u200b"` cannot name a shipment that then shows as blank in every list (InvalidFormat). The empty
 * string and other types are left to `Length` and `IsString`, which report them as usual.
 */
export function HasVisibleText(validationOptions?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'hasVisibleText',
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || value === '' || hasVisibleCharacter(value),
        defaultMessage: ({ property }: ValidationArguments) => `${property} must contain a visible character, not only spaces or invisible ones`,
      },
    },
    validationOptions,
  );
}
